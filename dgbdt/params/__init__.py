"""Training parameters: the schema of every parameter (schema.py) and their validation into
one canonical dict (normalize.py)."""
from .normalize import ParameterError, normalize_params, parameters_markdown  # noqa: F401
