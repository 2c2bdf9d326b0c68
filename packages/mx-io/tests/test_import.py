import mx_io


def test_version():
    assert mx_io.__version__ == "0.1.0"
