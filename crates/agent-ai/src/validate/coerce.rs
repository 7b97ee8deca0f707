//! Pi's argument coercions, planned once per schema and applied to each call.
//!
//! The rules are those Pi 0.73.1 applies before checking (`docs/tool-behaviour.md` §1):
//! TypeBox's `Value.Convert` for the primitive conversions (`"10"` → `10`,
//! `""` → `0`, `"1"` → `true`, `12345` → `"12345"`) and Pi's
//! `coerceWithJsonSchema` for how they reach nested values (`properties`,
//! `additionalProperties`, `items`, `allOf`, and `anyOf`/`oneOf`, where the first
//! branch that validates after coercion wins and a value that already matches a
//! branch is left alone). A JSON string is never parsed into an array or object;
//! like any lone value where an array belongs, it becomes a one-item array.
//!
//! Deviation #1 (DEVIATIONS.md): `null` is never converted. A `null` optional
//! property is removed (the model meant "not given"); a `null` anywhere else is
//! left for the validator to reject.

use jsonschema::Validator;
use serde_json::{Map, Value};

/// The largest integer a JavaScript number holds exactly (2^53); integral values
/// up to it are written as JSON integers, as `JSON.stringify` writes them.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_992.0;

/// How to coerce a value at one place in a schema: the parts of the schema the
/// coercions look at, with the union branches' validators compiled up front.
pub(super) struct Plan {
    /// The `type` keyword, as a list (empty when absent).
    types: Vec<String>,
    /// `properties`, in schema order.
    properties: Vec<Property>,
    /// `additionalProperties` when it is a schema (not `true`/`false`).
    additional: Option<Box<Plan>>,
    /// Positional item schemas (`prefixItems`, or draft 7's array-valued `items`).
    prefix_items: Vec<Plan>,
    /// The schema of every other item (`items` as a schema).
    items: Option<Box<Plan>>,
    /// `allOf` branches, applied one after another.
    all_of: Vec<Plan>,
    /// `anyOf` branches.
    any_of: Vec<Branch>,
    /// `oneOf` branches.
    one_of: Vec<Branch>,
}

/// One declared property of an object schema.
struct Property {
    name: String,
    plan: Plan,
    /// Not in `required` and its schema rejects `null`: a `null` value means
    /// "not given" and is removed before checking.
    null_means_absent: bool,
}

/// One branch of a union, with the validator that decides whether it matches.
struct Branch {
    plan: Plan,
    /// `None` when the branch cannot be compiled on its own (e.g. it holds a
    /// `$ref` into the root schema); such a branch is never chosen, as in Pi.
    check: Option<Validator>,
}

impl Branch {
    fn matches(&self, value: &Value) -> bool {
        self.check
            .as_ref()
            .is_some_and(|check| check.is_valid(value))
    }
}

impl Plan {
    /// Plans the coercions for `schema`; `compile` builds the validators that
    /// union branches and optional properties are tested with.
    pub(super) fn new(schema: &Value, compile: &dyn Fn(&Value) -> Option<Validator>) -> Plan {
        let types = match schema.get("type") {
            Some(Value::String(name)) => vec![name.clone()],
            Some(Value::Array(names)) => names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| {
                properties
                    .iter()
                    .map(|(name, subschema)| Property {
                        name: name.clone(),
                        plan: Plan::new(subschema, compile),
                        null_means_absent: !required.contains(&name.as_str())
                            && !compile(subschema).is_some_and(|v| v.is_valid(&Value::Null)),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let plan_of = |key: &str| {
            schema
                .get(key)
                .filter(|subschema| subschema.is_object())
                .map(|subschema| Box::new(Plan::new(subschema, compile)))
        };
        let plans_of = |key: &str| -> Vec<Plan> {
            schema
                .get(key)
                .and_then(Value::as_array)
                .map(|schemas| schemas.iter().map(|s| Plan::new(s, compile)).collect())
                .unwrap_or_default()
        };
        let branches_of = |key: &str| -> Vec<Branch> {
            schema
                .get(key)
                .and_then(Value::as_array)
                .map(|schemas| {
                    schemas
                        .iter()
                        .map(|s| Branch {
                            plan: Plan::new(s, compile),
                            check: compile(s),
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut prefix_items = plans_of("prefixItems");
        if prefix_items.is_empty() {
            prefix_items = plans_of("items");
        }
        Plan {
            types,
            properties,
            additional: plan_of("additionalProperties"),
            prefix_items,
            items: plan_of("items"),
            all_of: plans_of("allOf"),
            any_of: branches_of("anyOf"),
            one_of: branches_of("oneOf"),
        }
    }

    /// Coerces `value` (the caller's clone) and returns the result.
    pub(super) fn coerce(&self, mut value: Value) -> Value {
        for plan in &self.all_of {
            value = plan.coerce(value);
        }
        value = coerce_union(&self.any_of, value);
        value = coerce_union(&self.one_of, value);

        // With several types, a value that already has one of them stays as it
        // is ("1" for string|number remains a string).
        let already_matches =
            self.types.len() > 1 && self.types.iter().any(|name| has_type(&value, name));
        if !already_matches
            && let Some(converted) = self
                .types
                .iter()
                .find_map(|name| convert_primitive(&value, name))
        {
            value = converted;
        }

        match &mut value {
            Value::Object(map) if self.allows("object") => self.coerce_object(map),
            Value::Array(items) if self.allows("array") => self.coerce_array(items),
            _ => {}
        }
        value
    }

    /// Whether the schema lets a value of JSON type `name` through to the
    /// nested keywords (no `type` at all counts as yes).
    fn allows(&self, name: &str) -> bool {
        self.types.is_empty() || self.types.iter().any(|t| t == name)
    }

    fn coerce_object(&self, map: &mut Map<String, Value>) {
        for property in &self.properties {
            match map.get_mut(&property.name) {
                None => {}
                Some(Value::Null) if property.null_means_absent => {
                    map.shift_remove(&property.name);
                }
                Some(slot) => *slot = property.plan.coerce(slot.take()),
            }
        }
        if let Some(additional) = &self.additional {
            for (name, slot) in map.iter_mut() {
                if !self.properties.iter().any(|p| &p.name == name) {
                    *slot = additional.coerce(slot.take());
                }
            }
        }
    }

    fn coerce_array(&self, items: &mut [Value]) {
        for (index, slot) in items.iter_mut().enumerate() {
            if let Some(plan) = self.prefix_items.get(index).or(self.items.as_deref()) {
                *slot = plan.coerce(slot.take());
            }
        }
    }
}

/// A value that already matches a branch stays as it is; otherwise the first
/// branch whose coercion of it validates wins; otherwise it is unchanged.
fn coerce_union(branches: &[Branch], value: Value) -> Value {
    if branches.is_empty() || branches.iter().any(|branch| branch.matches(&value)) {
        return value;
    }
    branches
        .iter()
        .map(|branch| branch.plan.coerce(value.clone()))
        .zip(branches)
        .find_map(|(candidate, branch)| branch.matches(&candidate).then_some(candidate))
        .unwrap_or(value)
}

/// Whether `value` has JSON Schema type `name`.
fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "number" => value.is_number(),
        "integer" => as_integer(value).is_some(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "null" => value.is_null(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

/// `value` converted to type `name`, or `None` when it cannot be (or needs
/// not be). `null` is never converted (deviation #1).
fn convert_primitive(value: &Value, name: &str) -> Option<Value> {
    match (name, value) {
        ("number", Value::Bool(flag)) => Some(Value::from(u8::from(*flag))),
        ("number", Value::String(text)) => js_string_to_number(text).map(number_value),
        ("integer", Value::Bool(flag)) => Some(Value::from(u8::from(*flag))),
        ("integer", Value::String(text)) => js_string_to_number(text)
            .filter(|n| n.fract() == 0.0)
            .map(number_value),
        // 10.0 passes an integer check but would not deserialize into an integer
        // type; write it as 10.
        ("integer", Value::Number(number)) if !number.is_i64() && !number.is_u64() => {
            as_integer(value).map(number_value).filter(|n| n != value)
        }
        ("boolean", Value::String(text)) => match text.to_ascii_lowercase().as_str() {
            "true" | "1" => Some(Value::Bool(true)),
            "false" | "0" => Some(Value::Bool(false)),
            _ => None,
        },
        ("boolean", Value::Number(number)) => match number.as_f64() {
            Some(1.0) => Some(Value::Bool(true)),
            Some(0.0) => Some(Value::Bool(false)),
            _ => None,
        },
        ("string", Value::Number(number)) => Some(Value::String(js_number_string(number))),
        ("string", Value::Bool(flag)) => Some(Value::String(flag.to_string())),
        // TypeBox wraps a lone value in an array (a JSON string stays a string:
        // `"[{...}]"` becomes `["[{...}]"]`, whose item then fails as not an object).
        ("array", value) if !value.is_array() && !value.is_null() => {
            Some(Value::Array(vec![value.clone()]))
        }
        ("null", Value::String(text)) if text.is_empty() => Some(Value::Null),
        ("null", Value::Bool(false)) => Some(Value::Null),
        ("null", Value::Number(number)) if number.as_f64() == Some(0.0) => Some(Value::Null),
        _ => None,
    }
}

/// The value of an integral JSON number (`10` or `10.0`), else `None`.
fn as_integer(value: &Value) -> Option<f64> {
    let number = value.as_number()?;
    if number.is_i64() || number.is_u64() {
        return number.as_f64();
    }
    number.as_f64().filter(|n| n.fract() == 0.0)
}

/// A finite number as JSON: integral values within JavaScript's safe range as
/// integers (so `"10"` becomes `10`, not `10.0`), others as floats.
fn number_value(number: f64) -> Value {
    if number.fract() == 0.0 && number.abs() <= MAX_SAFE_INTEGER {
        // In range and integral, so the cast is exact (and -0 becomes 0).
        return Value::from(number as i64);
    }
    serde_json::Number::from_f64(number).map_or(Value::Null, Value::Number)
}

/// JavaScript's `Number(text)` as TypeBox uses it, limited to finite results
/// (JSON holds no others): surrounding whitespace ignored, empty means 0,
/// decimal with optional sign and exponent, or `0x`/`0o`/`0b` integers; and,
/// as TypeBox adds, `"true"`/`"false"` mean 1/0.
pub(super) fn js_string_to_number(text: &str) -> Option<f64> {
    let text = text.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    if text.is_empty() {
        return Some(0.0);
    }
    if text.eq_ignore_ascii_case("true") {
        return Some(1.0);
    }
    if text.eq_ignore_ascii_case("false") {
        return Some(0.0);
    }
    let radix = match text.get(..2) {
        Some("0x" | "0X") => Some(16),
        Some("0o" | "0O") => Some(8),
        Some("0b" | "0B") => Some(2),
        _ => None,
    };
    if let Some(radix) = radix {
        let digits = &text[2..];
        if digits.is_empty() {
            return None;
        }
        return digits
            .chars()
            .try_fold(0.0_f64, |total, c| {
                c.to_digit(radix)
                    .map(|d| total * f64::from(radix) + f64::from(d))
            })
            .filter(|n| n.is_finite());
    }
    // Rust also reads "inf" and "nan", which JavaScript does not (and JSON
    // cannot hold); only digits, signs, dots and exponents get through.
    if !text
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '+' | '-' | '.' | 'e' | 'E'))
    {
        return None;
    }
    text.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// JavaScript's `String(number)` for a JSON number.
pub(super) fn js_number_string(number: &serde_json::Number) -> String {
    if let Some(n) = number.as_i64() {
        return n.to_string();
    }
    if let Some(n) = number.as_u64() {
        return n.to_string();
    }
    number
        .as_f64()
        .map_or_else(|| number.to_string(), js_f64_string)
}

/// JavaScript's `String(x)` for a finite float: plain digits from 1e-6 up to
/// 1e21, exponent notation (`1e-7`, `1e+21`) outside, shortest round-trip digits.
pub(super) fn js_f64_string(number: f64) -> String {
    if number == 0.0 {
        return "0".to_owned();
    }
    let magnitude = number.abs();
    if (1e-6..1e21).contains(&magnitude) {
        return format!("{number}");
    }
    let text = format!("{number:e}");
    match text.split_once('e') {
        Some((mantissa, exponent)) if !exponent.starts_with('-') => {
            format!("{mantissa}e+{exponent}")
        }
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_read_as_numbers_the_way_javascript_reads_them() {
        let cases = [
            ("10", Some(10.0)),
            ("2.5", Some(2.5)),
            ("  7\n", Some(7.0)),
            ("", Some(0.0)),
            ("   ", Some(0.0)),
            ("-3e2", Some(-300.0)),
            (".5", Some(0.5)),
            ("0x1F", Some(31.0)),
            ("0b101", Some(5.0)),
            ("0o17", Some(15.0)),
            ("TRUE", Some(1.0)),
            ("false", Some(0.0)),
            ("abc", None),
            ("10px", None),
            ("inf", None),
            ("Infinity", None),
            ("NaN", None),
            ("0x", None),
            ("-0x10", None),
            ("1e999", None),
        ];
        for (text, expected) in cases {
            assert_eq!(js_string_to_number(text), expected, "{text:?}");
        }
    }

    #[test]
    fn numbers_print_as_javascript_prints_them() {
        let cases = [
            (2.5, "2.5"),
            (10.0, "10"),
            (-0.0, "0"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (123456789012345680000.0, "123456789012345680000"),
        ];
        for (number, expected) in cases {
            assert_eq!(js_f64_string(number), expected, "{number}");
        }
    }

    #[test]
    fn integral_results_become_json_integers() {
        assert_eq!(number_value(10.0).to_string(), "10");
        assert_eq!(number_value(-0.0).to_string(), "0");
        assert_eq!(number_value(2.5).to_string(), "2.5");
    }
}
