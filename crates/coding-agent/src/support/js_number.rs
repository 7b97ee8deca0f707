//! Numbers as JavaScript writes them, since Pi's texts and `details` are
//! JavaScript's: `500` (not `500.0`) for a whole number, `2.5` otherwise.

use serde::Serializer;

/// The largest integer JavaScript represents exactly (`2^53`); whole numbers
/// below it are written without a fraction.
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

/// A number as a JavaScript template string prints it (`Number.prototype.
/// toString`): the shortest digits that read back as the number, written
/// out from 1e-6 up to 1e21 (`500`, `2.5`, `0.000001`) and with an exponent
/// beyond (`1e+300`, `1e-7`, `1.5e-9`).
pub fn format(number: f64) -> String {
    if number.is_nan() {
        return "NaN".to_owned();
    }
    if number.is_infinite() {
        return if number > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        }
        .to_owned();
    }
    if number == 0.0 {
        return "0".to_owned();
    }
    // Rust's `{:e}` gives the same shortest digits: `1.5e-9`, `5e2`.
    let scientific = format!("{:e}", number.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let sign = if number < 0.0 { "-" } else { "" };
    // Where the decimal point goes, counted from the first digit.
    let point = exponent + 1;
    let count = digits.len() as i64;
    let written = if count <= point && point <= 21 {
        format!("{digits}{}", "0".repeat((point - count) as usize))
    } else if 0 < point && point <= 21 {
        let (whole, fraction) = digits.split_at(point as usize);
        format!("{whole}.{fraction}")
    } else if -6 < point && point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exponent_sign = if exponent < 0 { "-" } else { "+" };
        format!("{first}{fraction}e{exponent_sign}{}", exponent.abs())
    };
    format!("{sign}{written}")
}

/// Serialises an optional number as JSON the way `JSON.stringify` does:
/// whole numbers as integers. For `#[serde(serialize_with)]`.
pub fn serialize_option<S: Serializer>(
    number: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match *number {
        Some(n) if n.fract() == 0.0 && n.abs() < MAX_EXACT => serializer.serialize_i64(n as i64),
        Some(n) => serializer.serialize_f64(n),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Limit(#[serde(serialize_with = "serialize_option")] Option<f64>);

    /// What `String(n)` gives in JavaScript for each.
    #[test]
    fn numbers_are_written_as_javascript_writes_them() {
        let cases: [(f64, &str); 16] = [
            (0.0, "0"),
            (-0.0, "0"),
            (7.0, "7"),
            (-2.5, "-2.5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (123_456_789.0, "123456789"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e300, "1.5e+300"),
            (0.000_001, "0.000001"),
            (1.25e-6, "0.00000125"),
            (1e-7, "1e-7"),
            (1e-9, "1e-9"),
            (-3.5e-8, "-3.5e-8"),
            (f64::INFINITY, "Infinity"),
            (f64::NAN, "NaN"),
        ];
        for (number, javascript) in cases {
            assert_eq!(format(number), javascript, "{number:e}");
        }
    }

    #[test]
    fn whole_numbers_have_no_fraction_in_text_or_json() {
        assert_eq!(format(500.0), "500");
        assert_eq!(format(2.5), "2.5");
        assert_eq!(
            serde_json::to_string(&Limit(Some(500.0))).ok(),
            Some("500".into())
        );
        assert_eq!(
            serde_json::to_string(&Limit(Some(2.5))).ok(),
            Some("2.5".into())
        );
        assert_eq!(
            serde_json::to_string(&Limit(None)).ok(),
            Some("null".into())
        );
    }
}
