"""One renderer per provider API: the fake model's reply in that API's wire format."""
