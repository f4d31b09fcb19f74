from perfci.cli import entrypoint

entrypoint()
