import pathlib
import sys

# The examples import the application's loop from beside them.
sys.path.insert(0, str(pathlib.Path(__file__).parent))
