"""The CPU and CUDA drivers behind one Backend protocol (protocol.py); device selection and
GPU streams (device.py)."""
