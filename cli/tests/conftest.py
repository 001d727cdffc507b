"""The CLI's tests import their builders by name (builders.py beside this file)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
