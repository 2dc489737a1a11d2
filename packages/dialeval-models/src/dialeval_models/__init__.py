"""Data only: one folder per default model of dialeval (config.json, manifest.json with the
sha256 of every file, card.json). dialeval finds them with importlib.resources; see
`dialeval models list`."""
