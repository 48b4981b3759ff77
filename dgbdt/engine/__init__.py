"""The boosting engine: one front door (setup.py), the seam the grower talks to, shards,
sampling, sampled rounds, evaluation during training, checkpoints."""
