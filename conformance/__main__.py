from relavium_conformance._cli import entry

entry()
