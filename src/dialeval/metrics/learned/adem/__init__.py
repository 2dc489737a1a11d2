"""ADEM (Lowe et al. 2017, "Towards an Automatic Turing Test"): a learned response evaluator.

- `hred.py`: our own hierarchical GRU encoder, pre-trained as VHRED on a dialogue corpus;
- `encoders.py`: the two encoders ADEM can use (`hred:DIR`, `minilm[:DIR]`) behind one interface;
- `model.py`: ADEM itself (PCA, M and N, alpha and beta, training with early stopping);
- `data.py`: the local rated sets as ADEM training rows (scales mapped to 1-5);
- `metric.py`: the `adem`, `c_adem` and `r_adem` metrics that score with a saved model.
"""
