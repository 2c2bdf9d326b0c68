"""The parts of ``mx.test_utils``, one responsibility each."""
