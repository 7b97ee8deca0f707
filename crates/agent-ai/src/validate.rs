//! Argument validation: a validator compiled once per tool, Pi's coercions, and
//! Pi's error text.
//!
//! Models send `"10"` for a number and `"true"` for a boolean; Pi 0.73.1 quietly
//! converts such arguments before checking them (TypeBox `Value.Convert` plus its
//! own `coerceWithJsonSchema`), and a model that gets it wrong reads an error in
//! Pi's exact words. This module does the same in three steps:
//!
//! 1. `coerce`: convert a clone of the arguments along the schema (numbers,
//!    booleans and strings from one another; a lone value where an array
//!    belongs, `"x"` or `{...}`, becomes a one-item array, but a JSON string is
//!    never parsed), and drop `null` optional properties (deviation #1, below);
//! 2. check the result with a [`jsonschema`] validator compiled once, in
//!    [`ToolValidator::new`];
//! 3. on failure, `report` writes Pi's text: one `  - <path>: <message>` line
//!    per problem, in TypeBox's order and wording, then the arguments as received.
//!
//! Deliberate deviation from Pi (DEVIATIONS.md #1): Pi turns `null` into `"null"`
//! for a string and `0` for a number. Here `null` for an *optional* property means
//! the property is absent, and `null` for a *required* one is an error
//! (`must be string`); `null` is never converted into anything.

mod coerce;
mod cycles;
mod report;

use jsonschema::{Draft, Validator};
use serde_json::{Value, json};

use crate::tool::Tool;
use coerce::Coercion;

/// The schema of a tool could not be compiled.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid JSON Schema for tool \"{tool}\": {message}")]
pub struct SchemaError {
    /// The tool whose schema is broken.
    pub tool: String,
    /// What the schema compiler said.
    pub message: String,
}

/// Arguments did not match the tool's schema. `Display` is Pi's text, which the
/// model reads verbatim.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ValidationError {
    message: String,
}

/// A tool's argument validator, compiled once and reused for every call.
///
/// Building one compiles the tool's schema (and every `anyOf`/`oneOf` branch the
/// coercions need to test), which costs far more than a check; keep it beside the
/// tool rather than building one per call.
pub struct ToolValidator {
    name: String,
    schema: Value,
    validator: Validator,
    coercion: Coercion,
}

impl std::fmt::Debug for ToolValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolValidator")
            .field("name", &self.name)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl ToolValidator {
    /// Compiles the validator for `tool`.
    ///
    /// Fails with [`SchemaError`] when `tool.parameters` is not a usable JSON
    /// Schema (bad keyword values, an unresolvable `$ref`, references that
    /// lead back to themselves on one value; remote references are never
    /// fetched).
    pub fn new(tool: &Tool) -> Result<Self, SchemaError> {
        let refused = |message| SchemaError {
            tool: tool.name.clone(),
            message,
        };
        if let Some(cycle) = cycles::in_place_cycle(&tool.parameters) {
            // Each step as a `$ref` would name it (`#`, `#/$defs/A`): bare
            // pointers printed the root as nothing, `( -> )`.
            let steps: Vec<String> = cycle
                .iter()
                .map(|pointer| format!("#{}", uri_fragment(pointer)))
                .collect();
            return Err(refused(format!(
                "it refers to itself without reaching a value ({}), so checking arguments against it would never end",
                steps.join(" -> ")
            )));
        }
        let validator = compile(&tool.parameters).map_err(refused)?;
        let coercion = Coercion::new(&tool.parameters, &|pointer| {
            compile_part(&tool.parameters, pointer)
        });
        Ok(ToolValidator {
            name: tool.name.clone(),
            schema: tool.parameters.clone(),
            validator,
            coercion,
        })
    }

    /// Coerces `arguments` as Pi does and validates them; returns the coerced value.
    ///
    /// `arguments` itself is never changed. The error's text names every problem
    /// and repeats `arguments` as received (not as coerced), as Pi does.
    pub fn validate(&self, arguments: &Value) -> Result<Value, ValidationError> {
        let coerced = self.coercion.coerce(arguments.clone());
        if self.validator.is_valid(&coerced) {
            return Ok(coerced);
        }
        Err(ValidationError {
            message: report::message(
                &self.name,
                &self.schema,
                &self.validator,
                &coerced,
                arguments,
            ),
        })
    }
}

/// Compiles `schema` the one way this module does: offline (no remote `$ref`
/// is ever fetched, since the crate's default features are off), formats checked
/// as TypeBox checks them, and draft 7 (what [`Tool::for_args`] generates) unless
/// the schema names its own draft with `$schema`.
/// Fails with the compiler's message.
fn compile(schema: &Value) -> Result<Validator, String> {
    let mut options = jsonschema::options().should_validate_formats(true);
    if schema.get("$schema").is_none() {
        options = options.with_draft(Draft::Draft7);
    }
    options.build(schema).map_err(|error| error.to_string())
}

/// The URI the tool's schema is known by while one of its parts is compiled.
const ROOT_URI: &str = "urn:coding-agent:tool-parameters";

/// Compiles the subschema at JSON pointer `pointer` in `root` as [`compile`]
/// would compile `root`; `None` when it cannot be.
///
/// A subschema with a `$ref` in it is compiled in place: reached through a
/// `$ref` into `root`, so that its own `$ref`s (`#/$defs/O`) resolve.
/// Compiled on its own, the branch `{"$ref": "#/$defs/O"}` of a Python SDK
/// server's optional model could never match, and its values were never
/// coerced. One without is compiled alone, which costs a sixth as much
/// (`root` is not copied for each union branch and optional property).
fn compile_part(root: &Value, pointer: &str) -> Option<Validator> {
    let part = root.pointer(pointer)?;
    if !has_reference(part) {
        return compile(part).ok();
    }
    let draft = Draft::Draft7.detect(root).ok()?;
    jsonschema::options()
        .should_validate_formats(true)
        .with_draft(draft)
        .with_resource(ROOT_URI, draft.create_resource(root.clone()))
        .build(&json!({ "$ref": format!("{ROOT_URI}#{}", uri_fragment(pointer)) }))
        .ok()
}

/// Whether `schema` holds a `$ref` anywhere.
fn has_reference(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map
            .iter()
            .any(|(key, value)| (key == "$ref" && value.is_string()) || has_reference(value)),
        Value::Array(items) => items.iter().any(has_reference),
        _ => false,
    }
}

/// `pointer` percent-encoded for a URI fragment (a property may be named
/// `a b` or `100%`).
fn uri_fragment(pointer: &str) -> String {
    let mut fragment = String::with_capacity(pointer.len());
    for byte in pointer.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~$".contains(&byte) {
            fragment.push(char::from(byte));
        } else {
            fragment.push_str(&format!("%{byte:02X}"));
        }
    }
    fragment
}
