"""`clos reproduce`: the seed papers' experiments and claims (`experiments.py`), the expressions
claims are written in (`claim_expr.py`), running and judging them (`verdicts.py`), and the
verdict table and page (`page.py`)."""
