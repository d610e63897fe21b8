"""Parses an InvokeEndpointWithResponseStream body with botocore's own event-stream code.

Usage: parse_response_stream.py BODY_FILE. Prints one line per PayloadPart (its bytes, repr'd)
and, when the stream carries an exception, a final line "ERROR <Code> <Message>" exactly as
boto3's EventStreamError reports it.
"""
import sys

import botocore.exceptions
import botocore.session
from botocore.eventstream import EventStream
from botocore.parsers import EventStreamJSONParser


class _Raw:
    def __init__(self, data):
        self._data = data

    def stream(self):
        yield self._data

    def close(self):
        pass


def main():
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    model = botocore.session.get_session().get_service_model("sagemaker-runtime")
    op = model.operation_model("InvokeEndpointWithResponseStream")
    stream = EventStream(_Raw(data), op.output_shape.members["Body"], EventStreamJSONParser(),
                         op.name)
    try:
        for event in stream:
            print("PART", repr(event["PayloadPart"]["Bytes"]))
    except botocore.exceptions.EventStreamError as e:
        print("ERROR", e.response["Error"]["Code"], e.response["Error"]["Message"])


if __name__ == "__main__":
    main()
