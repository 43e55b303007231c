"""boto3's Lambda client against the function gateway (dataplane/test/lambda-boto3.test.ts).

Usage: python lambda-boto3.py <endpoint> <function name> <access key id> <secret access key>
Prints one JSON object: per case, what boto3 returned or the error it raised.
"""
import json
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint, function, key_id, secret = sys.argv[1:5]
arn = f"arn:aws:lambda:eu-west-1:123456789012:function:{function}"


def client(secret_key=secret):
    return boto3.client(
        "lambda",
        endpoint_url=endpoint,
        region_name="eu-west-1",
        aws_access_key_id=key_id,
        aws_secret_access_key=secret_key,
        config=Config(retries={"max_attempts": 1, "mode": "standard"}),
    )


def invoke(lambda_client=None, **kwargs):
    try:
        out = (lambda_client or client()).invoke(**kwargs)
    except ClientError as err:
        return {
            "error": err.response["Error"]["Code"],
            "message": err.response["Error"].get("Message"),
            "http": err.response["ResponseMetadata"]["HTTPStatusCode"],
            "type": err.response.get("Type"),
        }
    body = out["Payload"].read()
    return {
        "status": out["StatusCode"],
        "executed": out.get("ExecutedVersion"),
        "functionError": out.get("FunctionError"),
        "payload": json.loads(body) if body else None,
    }


def payload(**fields):
    return json.dumps({"dataset": {"id": "demo"}, **fields}).encode()


print(json.dumps({
    "create": invoke(FunctionName=function, Payload=payload(operation="create", schema="demo.Company", data={"id": "boto-co", "name": "Boto Co"})),
    "read": invoke(FunctionName=f"{arn}:$LATEST", Payload=payload(operation="get", schema="demo.Company", id="boto-co")),
    "event": invoke(FunctionName=function, InvocationType="Event", Payload=payload(operation="create", schema="demo.Company", data={"id": "boto-event-co", "name": "Event Co"})),
    "dryRun": invoke(FunctionName=function, InvocationType="DryRun", Payload=payload(operation="create", schema="demo.Company", data={"id": "boto-dry-co", "name": "Dry Co"})),
    "wrongKey": invoke(client("not-the-secret"), FunctionName=function, Payload=payload(operation="list", schema="demo.Company")),
    "unknownFunction": invoke(FunctionName="no-such-function", Payload=payload(operation="list", schema="demo.Company")),
}))
