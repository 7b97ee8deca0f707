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
//! Beyond Pi (whose built-in schemas have no references): a local `$ref`
//! (`#/$defs/O`, `#/definitions/O`, any JSON pointer into the tool's schema) is
//! followed too. MCP servers written with the Python SDK put every nested model
//! behind one, and without this `{"o": {"n": "5"}}` failed `o.n: must be
//! integer` although `"5"` was coerced at the top level. Each target is planned
//! once and shared, so a self-referencing schema (a tree) plans in finite time.
//!
//! Deviation #1 (DEVIATIONS.md): `null` is never converted. A `null` optional
//! property is removed (the model meant "not given"); a `null` anywhere else is
//! left for the validator to reject.

use std::collections::{HashMap, VecDeque};

use jsonschema::Validator;
use serde_json::{Map, Value};

/// The largest integer a JavaScript number holds exactly (2^53); integral values
/// up to it are written as JSON integers, as `JSON.stringify` writes them.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_992.0;

/// How many `$ref`s one coercion follows, nested: a reference cycle that never
/// descends into the value (`A` is `anyOf: [B]`, `B` is `allOf: [A]`) must end,
/// not overflow the stack. serde_json refuses arguments nested deeper than 128,
/// so a tree schema's references never need more.
const MAX_REFERENCE_DEPTH: usize = 128;

/// The coercions of one tool's schema: the plan of its root and of every
/// `$ref` target reached from it.
pub(super) struct Coercion {
    root: Plan,
    /// Indexed by [`Plan::reference`].
    targets: Vec<Plan>,
}

impl Coercion {
    /// Plans the coercions for the tool schema `root`. `compile` builds the
    /// validator of the subschema at a JSON pointer into `root` (`""` is `root`
    /// itself), with which union branches and optional properties are tested;
    /// `None` when it cannot be built.
    pub(super) fn new(root: &Value, compile: &dyn Fn(&str) -> Option<Validator>) -> Coercion {
        let mut planner = Planner {
            root,
            compile,
            targets: HashMap::new(),
            pending: VecDeque::new(),
        };
        let root_plan = planner.plan(root, "");
        // Targets are planned one after another, in the order they were found,
        // rather than recursively from their `$ref`: a chain of references
        // costs no stack, and each target is planned once.
        let mut targets = Vec::new();
        while let Some((pointer, schema)) = planner.pending.pop_front() {
            targets.push(planner.plan(schema, &pointer));
        }
        Coercion {
            root: root_plan,
            targets,
        }
    }

    /// Coerces `value` (the caller's clone) and returns the result.
    pub(super) fn coerce(&self, value: Value) -> Value {
        self.root.coerce(
            value,
            Walk {
                targets: &self.targets,
                references_left: MAX_REFERENCE_DEPTH,
            },
        )
    }
}

/// Builds the [`Plan`]s of one schema.
struct Planner<'a> {
    root: &'a Value,
    compile: &'a dyn Fn(&str) -> Option<Validator>,
    /// The index in [`Coercion::targets`] of each `$ref` target found so far, by
    /// its JSON pointer.
    targets: HashMap<String, usize>,
    /// Targets found but not planned yet, in index order.
    pending: VecDeque<(String, &'a Value)>,
}

/// What a coercion needs besides the plan at hand: the `$ref` targets, and how
/// many more references it may follow.
#[derive(Clone, Copy)]
struct Walk<'a> {
    targets: &'a [Plan],
    references_left: usize,
}

/// How to coerce a value at one place in a schema: the parts of the schema the
/// coercions look at, with the union branches' validators compiled up front.
struct Plan {
    /// The target of a local `$ref`, as an index into [`Coercion::targets`];
    /// applied first, as if it were one more `allOf` branch.
    reference: Option<usize>,
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
    /// `None` when the branch cannot be compiled; such a branch is never
    /// chosen, as in Pi.
    check: Option<Validator>,
}

impl Branch {
    fn matches(&self, value: &Value) -> bool {
        self.check
            .as_ref()
            .is_some_and(|check| check.is_valid(value))
    }
}

impl<'a> Planner<'a> {
    /// Plans the coercions for `schema`, found at the JSON pointer `at` in the
    /// root schema.
    fn plan(&mut self, schema: &'a Value, at: &str) -> Plan {
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
        let mut properties = Vec::new();
        if let Some(declared) = schema.get("properties").and_then(Value::as_object) {
            for (name, subschema) in declared {
                let at = format!("{at}/properties/{}", escape_pointer_token(name));
                properties.push(Property {
                    name: name.clone(),
                    null_means_absent: !required.contains(&name.as_str())
                        && !(self.compile)(&at).is_some_and(|v| v.is_valid(&Value::Null)),
                    plan: self.plan(subschema, &at),
                });
            }
        }
        let mut prefix_items = self.plans_of(schema, at, "prefixItems");
        if prefix_items.is_empty() {
            prefix_items = self.plans_of(schema, at, "items");
        }
        Plan {
            reference: schema
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|reference| self.target(reference)),
            types,
            properties,
            additional: self.plan_of(schema, at, "additionalProperties"),
            prefix_items,
            items: self.plan_of(schema, at, "items"),
            all_of: self.plans_of(schema, at, "allOf"),
            any_of: self.branches_of(schema, at, "anyOf"),
            one_of: self.branches_of(schema, at, "oneOf"),
        }
    }

    /// The plan of `schema[key]` when it is a schema object.
    fn plan_of(&mut self, schema: &'a Value, at: &str, key: &str) -> Option<Box<Plan>> {
        let subschema = schema.get(key).filter(|subschema| subschema.is_object())?;
        Some(Box::new(self.plan(subschema, &format!("{at}/{key}"))))
    }

    /// The plans of the schemas in the array `schema[key]`.
    fn plans_of(&mut self, schema: &'a Value, at: &str, key: &str) -> Vec<Plan> {
        listed(schema, at, key)
            .map(|(at, subschema)| self.plan(subschema, &at))
            .collect()
    }

    /// The union branches in the array `schema[key]`.
    fn branches_of(&mut self, schema: &'a Value, at: &str, key: &str) -> Vec<Branch> {
        listed(schema, at, key)
            .map(|(at, subschema)| Branch {
                check: (self.compile)(&at),
                plan: self.plan(subschema, &at),
            })
            .collect()
    }

    /// The index of the target of `reference`, queued for planning when it is
    /// new; `None` for a reference that is not a JSON pointer into the root
    /// schema (a remote document, an anchor) or points at nothing.
    fn target(&mut self, reference: &str) -> Option<usize> {
        let pointer = local_pointer(reference)?;
        if let Some(&index) = self.targets.get(&pointer) {
            return Some(index);
        }
        let schema = self.root.pointer(&pointer)?;
        let index = self.targets.len();
        self.targets.insert(pointer.clone(), index);
        self.pending.push_back((pointer, schema));
        Some(index)
    }
}

/// The schemas in the array `schema[key]` (none when it is not one), each
/// with its pointer (`schema` being at `at`).
fn listed<'v>(
    schema: &'v Value,
    at: &str,
    key: &str,
) -> impl Iterator<Item = (String, &'v Value)> + use<'v> {
    let prefix = format!("{at}/{key}");
    schema
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(move |(index, subschema)| (format!("{prefix}/{index}"), subschema))
}

/// The JSON pointer named by a local `$ref` (`#`, `#/$defs/a~1b%20c`), with the
/// URI fragment's percent-encoding undone; `None` for any other reference.
pub(super) fn local_pointer(reference: &str) -> Option<String> {
    let fragment = reference.strip_prefix('#')?;
    if !fragment.is_empty() && !fragment.starts_with('/') {
        return None;
    }
    let mut bytes = Vec::with_capacity(fragment.len());
    let mut rest = fragment.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

/// `name` as one step of a JSON pointer (`~` and `/` escaped).
pub(super) fn escape_pointer_token(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

impl Plan {
    /// Coerces `value` (the caller's clone) and returns the result.
    fn coerce(&self, mut value: Value, walk: Walk<'_>) -> Value {
        if let Some(target) = self.reference
            && walk.references_left > 0
        {
            let walk = Walk {
                references_left: walk.references_left - 1,
                ..walk
            };
            value = walk.targets[target].coerce(value, walk);
        }
        for plan in &self.all_of {
            value = plan.coerce(value, walk);
        }
        value = coerce_union(&self.any_of, value, walk);
        value = coerce_union(&self.one_of, value, walk);

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
            Value::Object(map) if self.allows("object") => self.coerce_object(map, walk),
            Value::Array(items) if self.allows("array") => self.coerce_array(items, walk),
            _ => {}
        }
        value
    }

    /// Whether the schema lets a value of JSON type `name` through to the
    /// nested keywords (no `type` at all counts as yes).
    fn allows(&self, name: &str) -> bool {
        self.types.is_empty() || self.types.iter().any(|t| t == name)
    }

    fn coerce_object(&self, map: &mut Map<String, Value>, walk: Walk<'_>) {
        for property in &self.properties {
            match map.get_mut(&property.name) {
                None => {}
                Some(Value::Null) if property.null_means_absent => {
                    map.shift_remove(&property.name);
                }
                Some(slot) => *slot = property.plan.coerce(slot.take(), walk),
            }
        }
        if let Some(additional) = &self.additional {
            for (name, slot) in map.iter_mut() {
                if !self.properties.iter().any(|p| &p.name == name) {
                    *slot = additional.coerce(slot.take(), walk);
                }
            }
        }
    }

    fn coerce_array(&self, items: &mut [Value], walk: Walk<'_>) {
        for (index, slot) in items.iter_mut().enumerate() {
            if let Some(plan) = self.prefix_items.get(index).or(self.items.as_deref()) {
                *slot = plan.coerce(slot.take(), walk);
            }
        }
    }
}

/// A value that already matches a branch stays as it is; otherwise the first
/// branch whose coercion of it validates wins; otherwise it is unchanged.
fn coerce_union(branches: &[Branch], value: Value, walk: Walk<'_>) -> Value {
    if branches.is_empty() || branches.iter().any(|branch| branch.matches(&value)) {
        return value;
    }
    branches
        .iter()
        .map(|branch| branch.plan.coerce(value.clone(), walk))
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

    /// A cycle of references that never descends into the value (which the
    /// validator itself could not check either) ends after a bounded number of
    /// steps instead of overflowing the stack.
    #[test]
    fn reference_cycle_ends() {
        let schema = serde_json::json!({
            "$ref": "#/$defs/A",
            "$defs": {"A": {"type": "integer", "allOf": [{"$ref": "#/$defs/B"}]},
                      "B": {"anyOf": [{"$ref": "#"}]}}
        });
        let coercion = Coercion::new(&schema, &|_| None);
        assert_eq!(coercion.targets.len(), 3);
        assert_eq!(coercion.coerce(Value::from("5")), Value::from(5));
    }

    #[test]
    fn local_references_name_json_pointers() {
        assert_eq!(local_pointer("#").as_deref(), Some(""));
        assert_eq!(local_pointer("#/$defs/O").as_deref(), Some("/$defs/O"));
        assert_eq!(local_pointer("#/a%20b/c~1d").as_deref(), Some("/a b/c~1d"));
        assert_eq!(local_pointer("#anchor"), None);
        assert_eq!(local_pointer("other.json#/x"), None);
        assert_eq!(local_pointer("#/bad%2"), None);
    }

    #[test]
    fn integral_results_become_json_integers() {
        assert_eq!(number_value(10.0).to_string(), "10");
        assert_eq!(number_value(-0.0).to_string(), "0");
        assert_eq!(number_value(2.5).to_string(), "2.5");
    }
}
