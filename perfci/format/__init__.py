"""The formats: the model, the results and comparison documents, their codec and JSON Schemas."""
