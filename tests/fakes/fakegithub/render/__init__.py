"""GitHub's JSON shapes for the fake's objects, as pure functions of state and links.

Shapes follow the response schemas of the vendored OpenAPI description (every required field,
``url``/``html_url``/``node_id`` included); the pipeline checks each response against the
schema, so a missing field shows up as a response mismatch in the fake's own tests.
"""
