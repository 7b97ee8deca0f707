//! Numbers as JavaScript writes them, since Pi's texts and `details` are
//! JavaScript's: `500` (not `500.0`) for a whole number, `2.5` otherwise.

use serde::Serializer;

/// The largest integer JavaScript represents exactly (`2^53`); whole numbers
/// below it are written without a fraction.
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

/// A number as a JavaScript template string prints it (`500`, `2.5`); the
/// two agree for every number a model plausibly sends.
pub fn format(number: f64) -> String {
    format!("{number}")
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
