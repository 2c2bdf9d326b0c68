import mx_graph


def test_version():
    assert mx_graph.__version__ == "0.1.0"
