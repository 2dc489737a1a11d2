"""Query augmentation with controlled diversity (holistic paper, section 2.3): WordNet
substitution (`wordnet`) and a conditional text generator (`ctg`). Heavy parts load lazily."""
