"""Validates kforge's output files against docs/schemas with python3-jsonschema (Debian's).

    python3 validate_schema.py SCHEMA FILE [--lines]

--lines: FILE holds one JSON document per line (results.jsonl, records.jsonl)."""

import json
import sys

import jsonschema


def main(schema_path, data_path, lines):
    with open(schema_path, encoding="utf-8") as f:
        validator = jsonschema.Draft202012Validator(json.load(f))
    with open(data_path, encoding="utf-8") as f:
        documents = [json.loads(line) for line in f if line.strip()] if lines else [json.load(f)]
    assert documents, f"{data_path} is empty"
    for number, document in enumerate(documents, 1):
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
        if errors:
            for error in errors[:5]:
                print(f"{data_path}:{number}: {'/'.join(map(str, error.path))}: {error.message}")
            return 1
    print(f"{data_path}: {len(documents)} document(s) valid against {schema_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], "--lines" in sys.argv[3:]))
