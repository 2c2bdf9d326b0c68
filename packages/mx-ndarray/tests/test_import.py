import mx_ndarray


def test_version():
    assert mx_ndarray.__version__ == "0.1.0"
