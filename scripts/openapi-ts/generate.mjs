// openapi-typescript's types of the schema, written where client_example.ts imports them.
//
//     node generate.mjs <openapi.json> <schema.d.ts>
//
// The Node API rather than the CLI for one thing only: a binary schema (`format: binary`, which
// the schema gives file parts and downloads) becomes `Blob`, as openapi-typescript documents
// (https://openapi-ts.dev/node#example-blob-types); its CLI has no such option and types every
// string as `string`.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";

const BLOB = ts.factory.createTypeReferenceNode(ts.factory.createIdentifier("Blob"));
const [input, output] = process.argv.slice(2);
const ast = await openapiTS(pathToFileURL(path.resolve(input)), {
  transform(schemaObject) {
    if (schemaObject.format === "binary") {
      return BLOB;
    }
    return undefined;
  },
});
fs.writeFileSync(output, astToString(ast));
