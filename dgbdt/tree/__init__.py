"""Trees: histograms, split evaluation, growth, the model."""
