from kafkars.server.cli import main

main(prog_name="python -m kafkars.server")
