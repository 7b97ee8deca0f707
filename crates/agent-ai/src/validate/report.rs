//! Pi's validation error text, built from the `jsonschema` crate's errors.
//!
//! Pi 0.73.1 lists TypeBox's errors, one line each:
//!
//! ```text
//! Validation failed for tool "<name>":
//!   - <path>: <message>
//!
//! Received arguments:
//! <JSON.stringify(arguments, null, 2)>
//! ```
//!
//! Models have learnt these words, so the jsonschema errors are translated to
//! TypeBox's (`must be number`, `must have required properties path`), put in the
//! order TypeBox finds them (per schema node: `type`, then `required`,
//! `additionalProperties`, `properties` in schema order, array items by index, ...),
//! and reshaped where TypeBox reports differently: the missing properties of one
//! object share a line, and `additionalProperties: false` gives a `schema is false`
//! line per extra key before the object's own line.

use std::io;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::Location;
use jsonschema::{ValidationError as Found, Validator};
use serde::Serialize;
use serde_json::Value;
use serde_json::ser::{Formatter, PrettyFormatter};

use super::coerce::{js_f64_string, js_number_string};

/// TypeBox's order of keywords within one schema node (its `ErrorSchema`).
const KEYWORD_ORDER: [&str; 39] = [
    "type",
    "required",
    "additionalProperties",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "properties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "additionalItems",
    "contains",
    "items",
    "maxContains",
    "maxItems",
    "minContains",
    "minItems",
    "prefixItems",
    "uniqueItems",
    "format",
    "maxLength",
    "minLength",
    "pattern",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "maximum",
    "minimum",
    "multipleOf",
    "$ref",
    "const",
    "enum",
    "if",
    "not",
    "allOf",
    "anyOf",
    "oneOf",
    "unevaluatedItems",
    "unevaluatedProperties",
];

/// The full text of a failed validation of `coerced` (what was checked);
/// `original` is what the model sent, which the text repeats.
pub(super) fn message(
    tool: &str,
    schema: &Value,
    validator: &Validator,
    coerced: &Value,
    original: &Value,
) -> String {
    let mut problems = Vec::new();
    for found in validator.iter_errors(coerced) {
        collect(found, schema, coerced, &mut problems);
    }
    // Stable: problems TypeBox would meet at the same point keep jsonschema's order.
    problems.sort_by(|a, b| a.order.cmp(&b.order));
    let lines: Vec<String> = merge_missing(problems)
        .iter()
        .flat_map(Problem::lines)
        .map(|(path, message)| format!("  - {path}: {message}"))
        .collect();
    let list = if lines.is_empty() {
        "Unknown validation error".to_owned()
    } else {
        lines.join("\n")
    };
    format!(
        "Validation failed for tool \"{tool}\":\n{list}\n\nReceived arguments:\n{}",
        js_stringify_pretty(original)
    )
}

/// One problem, placed and worded as TypeBox reports it.
struct Problem {
    /// Sort key: where TypeBox's walk of the schema meets this problem.
    order: Vec<(u8, usize)>,
    /// JSON pointer of the offending value.
    instance_path: String,
    /// JSON pointer of the failing keyword (tells apart two `required` lists).
    schema_path: String,
    issue: Issue,
}

enum Issue {
    /// `required` properties absent from the object.
    Missing(Vec<String>),
    /// Keys that `additionalProperties: false` forbids.
    Unexpected(Vec<String>),
    /// Any other problem, already in TypeBox's words.
    Message(String),
}

impl Problem {
    /// The `(path, message)` lines of this problem.
    fn lines(&self) -> Vec<(String, String)> {
        match &self.issue {
            // Pi names the first missing property in the path, all in the message.
            Issue::Missing(names) => {
                let base = dotted(&self.instance_path);
                let first = names.first().map_or("", String::as_str);
                let path = if base.is_empty() {
                    first.to_owned()
                } else {
                    format!("{base}.{first}")
                };
                vec![(
                    path,
                    format!("must have required properties {}", names.join(", ")),
                )]
            }
            Issue::Unexpected(keys) => keys
                .iter()
                .map(|key| {
                    let child = format!("{}/{key}", self.instance_path);
                    (at(&child), "schema is false".to_owned())
                })
                .chain([(
                    at(&self.instance_path),
                    "must not have additional properties".to_owned(),
                )])
                .collect(),
            Issue::Message(message) => vec![(at(&self.instance_path), message.clone())],
        }
    }
}

/// Adds the problem(s) of one jsonschema error: a failed `anyOf`/`oneOf` brings
/// its branches' problems first, as TypeBox lists them.
fn collect(found: Found<'_>, schema: &Value, instance: &Value, out: &mut Vec<Problem>) {
    let fallback = found.to_string();
    let Found {
        kind,
        instance_path,
        schema_path,
        instance: offending,
    } = found;
    let order = order_key(schema, &schema_path, instance, &instance_path);
    let issue = match kind {
        ValidationErrorKind::Required { property } => Issue::Missing(vec![
            property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned),
        ]),
        ValidationErrorKind::AdditionalProperties { unexpected } => Issue::Unexpected(unexpected),
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            let is_any_of = schema_path.as_str().ends_with("/anyOf");
            for branch in context {
                for inner in branch {
                    collect(inner, schema, instance, out);
                }
            }
            Issue::Message(
                if is_any_of {
                    "must match a schema in anyOf"
                } else {
                    "must match exactly one schema in oneOf"
                }
                .to_owned(),
            )
        }
        ValidationErrorKind::Type { kind } => {
            Issue::Message(type_message(schema.pointer(schema_path.as_str()), &kind))
        }
        kind => Issue::Message(wording(kind, &offending, fallback)),
    };
    out.push(Problem {
        order,
        instance_path: instance_path.as_str().to_owned(),
        schema_path: schema_path.as_str().to_owned(),
        issue,
    });
}

/// `must be number`, or `must be either string or number` for a list of types
/// (in the schema's order when the schema can be read at the error's path).
fn type_message(declared: Option<&Value>, kind: &TypeKind) -> String {
    match declared {
        Some(Value::String(name)) => format!("must be {name}"),
        Some(Value::Array(names)) => {
            let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            format!("must be either {}", names.join(" or "))
        }
        _ => match kind {
            TypeKind::Single(name) => format!("must be {name}"),
            TypeKind::Multiple(names) => {
                let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
                format!("must be either {}", names.join(" or "))
            }
        },
    }
}

/// TypeBox's words (its `en_US` locale) for the remaining kinds of error;
/// `fallback` (jsonschema's own text) for kinds TypeBox does not have.
fn wording(kind: ValidationErrorKind, offending: &Value, fallback: String) -> String {
    use ValidationErrorKind as Kind;
    match kind {
        Kind::FalseSchema => "schema is false".to_owned(),
        Kind::Constant { .. } => "must be equal to constant".to_owned(),
        Kind::Contains => "must contain at least 1 valid item".to_owned(),
        Kind::Enum { .. } => "must be equal to one of the allowed values".to_owned(),
        Kind::ExclusiveMaximum { limit } => format!("must be < {}", js_value(&limit)),
        Kind::ExclusiveMinimum { limit } => format!("must be > {}", js_value(&limit)),
        Kind::Maximum { limit } => format!("must be <= {}", js_value(&limit)),
        Kind::Minimum { limit } => format!("must be >= {}", js_value(&limit)),
        Kind::Format { format } => format!("must match format \"{format}\""),
        Kind::MaxItems { limit } => format!("must not have more than {limit} items"),
        Kind::MinItems { limit } => format!("must not have fewer than {limit} items"),
        Kind::AdditionalItems { limit } => format!("must not have more than {limit} items"),
        Kind::MaxLength { limit } => format!("must not have more than {limit} characters"),
        Kind::MinLength { limit } => format!("must not have fewer than {limit} characters"),
        Kind::MaxProperties { limit } => format!("must not have more than {limit} properties"),
        Kind::MinProperties { limit } => format!("must not have fewer than {limit} properties"),
        Kind::MultipleOf { multiple_of } => {
            format!("must be multiple of {}", js_f64_string(multiple_of))
        }
        Kind::Not { .. } => "must not be valid".to_owned(),
        Kind::OneOfMultipleValid { .. } | Kind::OneOfNotValid { .. } => {
            "must match exactly one schema in oneOf".to_owned()
        }
        Kind::AnyOf { .. } => "must match a schema in anyOf".to_owned(),
        Kind::Pattern { pattern } => format!("must match pattern \"{pattern}\""),
        Kind::PropertyNames { error } => {
            let name = error
                .instance
                .as_str()
                .map_or_else(|| offending.to_string(), str::to_owned);
            format!("property names {name} are invalid")
        }
        Kind::UnevaluatedItems { .. } => "must not have unevaluated items".to_owned(),
        Kind::UnevaluatedProperties { .. } => "must not have unevaluated properties".to_owned(),
        Kind::UniqueItems => "must not have duplicate items".to_owned(),
        Kind::Custom { message } => message,
        _ => fallback,
    }
}

/// A JSON value as JavaScript would print it in a message (`5`, not `5.0`).
fn js_value(value: &Value) -> String {
    match value {
        Value::Number(number) => js_number_string(number),
        other => other.to_string(),
    }
}

/// Joins the `required` problems of one object (jsonschema reports one per
/// missing property; TypeBox one per object).
fn merge_missing(problems: Vec<Problem>) -> Vec<Problem> {
    let mut merged: Vec<Problem> = Vec::with_capacity(problems.len());
    for problem in problems {
        if let Some(last) = merged.last_mut()
            && last.instance_path == problem.instance_path
            && last.schema_path == problem.schema_path
            && let (Issue::Missing(names), Issue::Missing(more)) = (&mut last.issue, &problem.issue)
        {
            names.extend(more.iter().cloned());
            continue;
        }
        merged.push(problem);
    }
    merged
}

/// Pi's path: the JSON pointer without its leading `/`, `/` replaced by `.`.
fn dotted(pointer: &str) -> String {
    pointer
        .strip_prefix('/')
        .unwrap_or(pointer)
        .replace('/', ".")
}

/// [`dotted`], with `root` for the arguments themselves.
fn at(pointer: &str) -> String {
    let path = dotted(pointer);
    if path.is_empty() {
        "root".to_owned()
    } else {
        path
    }
}

/// Where TypeBox's depth-first walk of the schema meets the error at
/// `schema_path`: per schema node, the rank of the keyword in
/// [`KEYWORD_ORDER`] and the position below it (property in schema order,
/// extra key in the object's order, item index, union branch).
fn order_key(
    schema: &Value,
    schema_path: &Location,
    instance: &Value,
    instance_path: &Location,
) -> Vec<(u8, usize)> {
    let keywords: Vec<String> = schema_path.into_iter().map(|s| s.to_string()).collect();
    let steps: Vec<String> = instance_path.into_iter().map(|s| s.to_string()).collect();
    let mut keywords = keywords.iter().peekable();
    let mut steps = steps.iter();
    let mut node = schema;
    let mut value = Some(instance);
    let mut key = Vec::new();
    while let Some(keyword) = keywords.next() {
        let keyword = keyword.as_str();
        let rank = rank(keyword);
        let terminal = keywords.peek().is_none();
        let Some(below) = node.get(keyword) else {
            key.push((rank, 0));
            break;
        };
        match keyword {
            "properties" | "patternProperties" | "dependencies" | "dependentSchemas" => {
                let Some(name) = keywords.next() else {
                    key.push((rank, usize::MAX));
                    break;
                };
                let position = below
                    .as_object()
                    .and_then(|map| map.keys().position(|k| k == name))
                    .unwrap_or(usize::MAX);
                key.push((rank, position));
                let Some(next) = below.get(name.as_str()) else {
                    break;
                };
                node = next;
                if matches!(keyword, "properties" | "patternProperties") {
                    value = steps
                        .next()
                        .and_then(|step| value.and_then(|v| v.get(step.as_str())));
                }
            }
            // A list of subschemas (a tuple's items, a union's branches): the
            // next keyword is the index of one.
            "items" | "prefixItems" | "allOf" | "anyOf" | "oneOf" if below.is_array() => {
                let Some(index) = keywords.next().and_then(|i| i.parse::<usize>().ok()) else {
                    // A union's own line comes after its branches' lines.
                    key.push((rank, usize::MAX));
                    break;
                };
                key.push((rank, index));
                let Some(next) = below.get(index) else { break };
                node = next;
                if matches!(keyword, "items" | "prefixItems") {
                    steps.next();
                    value = value.and_then(|v| v.get(index));
                }
            }
            "items" | "additionalItems" | "unevaluatedItems" if !terminal => {
                let index = steps.next().and_then(|s| s.parse::<usize>().ok());
                key.push((rank, index.unwrap_or(usize::MAX)));
                node = below;
                value = index.and_then(|i| value.and_then(|v| v.get(i)));
            }
            "additionalProperties" | "unevaluatedProperties" if !terminal => {
                let step = steps.next();
                let position = step
                    .and_then(|s| {
                        value
                            .and_then(Value::as_object)
                            .and_then(|map| map.keys().position(|k| k == s))
                    })
                    .unwrap_or(usize::MAX);
                key.push((rank, position));
                node = below;
                value = step.and_then(|s| value.and_then(|v| v.get(s.as_str())));
            }
            "if" | "then" | "else" | "not" if !terminal => {
                key.push((rank, 0));
                node = below;
            }
            _ => {
                key.push((rank, 0));
                break;
            }
        }
    }
    key
}

/// The rank of `keyword` in [`KEYWORD_ORDER`]; `then`/`else` rank with `if`,
/// unknown keywords last.
fn rank(keyword: &str) -> u8 {
    let keyword = match keyword {
        "then" | "else" => "if",
        other => other,
    };
    KEYWORD_ORDER
        .iter()
        .position(|k| *k == keyword)
        .and_then(|i| u8::try_from(i).ok())
        .unwrap_or(u8::MAX)
}

/// `JSON.stringify(value, null, 2)`: two-space indentation, keys in their
/// order, numbers as JavaScript prints them (`10`, never `10.0`).
pub(super) fn js_stringify_pretty(value: &Value) -> String {
    let mut out = Vec::new();
    let formatter = JsFormatter(PrettyFormatter::with_indent(b"  "));
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    if value.serialize(&mut serializer).is_err() {
        return value.to_string();
    }
    String::from_utf8(out).unwrap_or_else(|_| value.to_string())
}

/// serde_json's pretty printer with JavaScript's number formatting.
struct JsFormatter(PrettyFormatter<'static>);

/// Forwards each named `Formatter` method to the wrapped `PrettyFormatter`:
/// the layout is its, only the numbers are JavaScript's.
macro_rules! forward_to_pretty {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            fn $method<W: ?Sized + io::Write>(
                &mut self,
                writer: &mut W,
                $($arg: $ty),*
            ) -> io::Result<()> {
                self.0.$method(writer, $($arg),*)
            }
        )*
    };
}

impl Formatter for JsFormatter {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(js_f64_string(value).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(writer, f64::from(value))
    }

    forward_to_pretty! {
        begin_array();
        end_array();
        begin_array_value(first: bool);
        end_array_value();
        begin_object();
        end_object();
        begin_object_key(first: bool);
        begin_object_value();
        end_object_value();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_print_as_json_stringify_with_two_spaces() {
        let value: Value =
            serde_json::from_str(r#"{"z":1,"a":[10.0,2.5,{}],"e":[],"s":"q\"\n\u0001"}"#).unwrap();
        assert_eq!(
            js_stringify_pretty(&value),
            "{\n  \"z\": 1,\n  \"a\": [\n    10,\n    2.5,\n    {}\n  ],\n  \"e\": [],\n  \"s\": \"q\\\"\\n\\u0001\"\n}"
        );
        assert_eq!(js_stringify_pretty(&json!({})), "{}");
        assert_eq!(js_stringify_pretty(&json!("x")), "\"x\"");
    }

    #[test]
    fn no_listed_problem_reads_unknown_validation_error() {
        let schema = json!({"type": "object"});
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert_eq!(
            message("t", &schema, &validator, &json!({}), &json!({"a": 1})),
            "Validation failed for tool \"t\":\nUnknown validation error\n\nReceived arguments:\n{\n  \"a\": 1\n}"
        );
    }

    #[test]
    fn paths_use_dots_and_root_for_the_arguments() {
        assert_eq!(at(""), "root");
        assert_eq!(at("/edits/0/newText"), "edits.0.newText");
    }
}
