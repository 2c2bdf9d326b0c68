import mx_kvstore


def test_version():
    assert mx_kvstore.__version__ == "0.1.0"
