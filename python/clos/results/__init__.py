"""A run's results and how they are shown: the `Results` tables (`results.py`), a saved run as
reports read it (`run_folder.py`), the key numbers (`key_numbers.py`), plots, the HTML pages'
pieces (`page.py`), `clos report` (`report.py`), `clos compare` (`compare.py`) and telemetry
queries over a run's counters (`query.py`)."""

from clos.results.query import Query, QueryError
from clos.results.results import Results

__all__ = ["Query", "QueryError", "Results"]
