"""The results library's tests import their builders by name (finished_runs.py beside this file)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
