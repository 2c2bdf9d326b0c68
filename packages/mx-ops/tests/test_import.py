import mx_ops


def test_version():
    assert mx_ops.__version__ == "0.1.0"
