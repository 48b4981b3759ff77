"""``python -m dgbdt.params > docs/parameters.md``: the parameter reference page."""
import sys

from .normalize import parameters_markdown

sys.stdout.write(parameters_markdown())
