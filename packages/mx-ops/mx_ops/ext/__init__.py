"""Ways to add operators from outside mx-ops: the OperatorProperty style
(operator.py), the SimpleOp style (simple_op.py), Python custom operators
(custom.py, registered as ``Custom``) and C libraries (library.py)."""
