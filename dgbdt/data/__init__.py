"""Data: quantile sketch, quantization, bit-packed pages, Dataset."""
