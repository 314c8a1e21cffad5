"""The billing API's serializers, one module per resource: what each answer shows and the
request bodies beside it.

Each output serializer answers with its resource's representation function
(``billing/representations.py``, shared with the event log); its declared fields document that
answer for OpenAPI, held equal to it by ``tests/api/test_representations.py``. The examples the
documentation shows are in ``billing/api/examples.py``.
"""
