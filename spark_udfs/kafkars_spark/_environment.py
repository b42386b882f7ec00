"""What a Spark session needs from the environment, settled when kafkars_spark is imported,
before the session exists.

Spark starts its Python workers with `PYSPARK_PYTHON`, or `python3` from PATH when that is
unset. A script run as `/path/to/venv/bin/python job.py` without activating the venv then
gets workers that cannot import this package, and `format("kafkars")` fails with
DATA_SOURCE_NOT_FOUND. The workers should run the interpreter that imported us.
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings

JAVA_MISSING = (
    "kafkars-spark: Spark needs Java 17 or 21 and none was found: install a JDK or JRE "
    "(Debian/Ubuntu: apt install openjdk-17-jre-headless) or set JAVA_HOME"
)


class JavaMissingWarning(UserWarning):
    """Spark cannot start: no `java` on PATH and no JAVA_HOME."""


def _spark_context_exists() -> bool:
    try:
        from pyspark import SparkContext
    except ImportError:
        return False
    return SparkContext._active_spark_context is not None


def prepare_spark_environment() -> None:
    # A running SparkContext has already chosen its workers' interpreter; changing the
    # variable now would only mislead.
    if not _spark_context_exists():
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.path.exists(os.path.join(java_home, "bin", "java")):
        return
    if not java_home and shutil.which("java"):
        return
    warnings.warn(JAVA_MISSING, JavaMissingWarning, stacklevel=3)
