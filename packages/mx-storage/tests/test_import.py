import mx_storage


def test_version():
    assert mx_storage.__version__ == "0.1.0"
