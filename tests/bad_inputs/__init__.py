"""Generators of bad inputs, one module per kind of input: model archives (``archives``), run
folders (``runs``) and the API's arguments (``api``). Each generator returns a list of named
cases; ``tests/test_bad_inputs_more.py`` feeds every case to the code that reads it and counts them."""
