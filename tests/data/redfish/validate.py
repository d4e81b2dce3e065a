#!/usr/bin/python3
"""Validates Redfish payloads against the schema subset in this directory.

usage: validate.py SCHEMA CASES
  SCHEMA  redfish-subset.schema.json (draft-07; one definition per resource type)
  CASES   a JSON array of {"uri": ..., "definition": ..., "instance": {...}}
Prints one line per failure ("uri: path: message") and exits 1 if there was any, 0 if every
instance is valid, 2 on a usage or input error. Uses Debian's python3-jsonschema.
"""
import json
import sys

import jsonschema


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    with open(sys.argv[2]) as f:
        cases = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    failures = 0
    for case in cases:
        definition = case["definition"]
        if definition not in schema["definitions"]:
            print("%s: no schema definition %s" % (case["uri"], definition))
            failures += 1
            continue
        root = {"definitions": schema["definitions"], "$ref": "#/definitions/" + definition}
        validator = jsonschema.Draft7Validator(root)
        for e in validator.iter_errors(case["instance"]):
            where = "/".join(str(p) for p in e.absolute_path) or "(root)"
            print("%s: %s: %s" % (case["uri"], where, e.message))
            failures += 1
    print("validated %d instances, %d failures" % (len(cases), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
