import kafkars


def test_version_is_exported() -> None:
    assert kafkars.__version__ == "0.1.0"
