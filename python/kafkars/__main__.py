"""`python -m kafkars [server.properties] [--override key=value ...]` starts a broker, as
`kafkars-server-start` does."""

from kafkars.server.cli import main

main(prog_name="python -m kafkars")
