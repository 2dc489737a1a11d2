"""ADEM (Lowe et al. 2017, "Towards an Automatic Turing Test"): a learned response evaluator.

- `hred.py`: our own hierarchical GRU encoder, pre-trained as VHRED on a dialogue corpus;
- `encoders.py`: the two encoders ADEM can use (`hred:DIR`, `minilm[:DIR]`) behind one interface;
- `model.py`: ADEM itself, the `Adem` estimator (its settings, its folder, its fitted parts);
- `bilinear.py`: its bilinear head (PCA, M and N, alpha and beta: the scoring equation);
- `copy.py`: its copy term (what a reply loses for repeating the context's last turn);
- `encoding.py`: the encoder a model reads with (checked against the one it was trained with; its
  tuned layers after stage 2), its vectors, and the encoder files a saved model carries;
- `training.py`: stage 1 (the rows split by context, oversampling, Adam with early stopping);
- `finetune.py`: stage 2 (the top MiniLM layers tuned with M and N);
- `search.py`: the settings search of `train adem --search`;
- `data.py`: the registered rated sets as ADEM training rows (scales mapped to 1-5);
- `metric.py`: the `adem`, `c_adem` and `r_adem` metrics that score with a saved model.
"""
