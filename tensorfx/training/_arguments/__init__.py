"""Arguments: the flags, list flags, Gematria flags and run files a trainer reads."""
