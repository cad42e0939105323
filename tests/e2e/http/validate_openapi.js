// Validates an OpenAPI document with @apidevtools/swagger-parser (schema and references),
// then real answers of the server against the document's component schemas with ajv
// (JSON Schema 2020-12, as OpenAPI 3.1 uses). Both come from npm into <build>/npm
// (packaging/dev.sh). Usage: validate_openapi.js doc.json [samples.json]
// where samples.json is [[schema name, answer], ...]. Prints "valid" or the errors.
const fs = require("fs");
const path = require("path");
const npm = path.resolve(process.env.SHELLCTL_BUILD_DIR || "build", "npm", "node_modules");
const SwaggerParser = require(path.join(npm, "@apidevtools", "swagger-parser"));
const Ajv2020 = require(path.join(npm, "ajv", "dist", "2020")).default;

const doc = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const samples = process.argv[3] ? JSON.parse(fs.readFileSync(process.argv[3], "utf8")) : [];

SwaggerParser.validate(structuredClone(doc))
  .then(() => {
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false })  // times: by pattern;
    ajv.addSchema({ $id: "doc", components: doc.components });
    const failures = [];
    for (const [name, answer] of samples) {
      const check = ajv.getSchema(`doc#/components/schemas/${name}`);
      if (!check) failures.push(`${name}: no such schema`);
      else if (!check(answer)) failures.push(`${name}: ${JSON.stringify(check.errors)} in ${JSON.stringify(answer)}`);
    }
    if (failures.length) {
      console.error(failures.join("\n"));
      process.exit(1);
    }
    console.log("valid");
  })
  .catch((e) => { console.error(e.message); process.exit(1); });
