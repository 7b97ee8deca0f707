//! The `images` of RPC `prompt`, `steer` and `follow_up`, checked as `read`
//! checks an image file (`tools::read::image`) before anything is sent.
//!
//! Taken as given, an image that is not base64, not an image, or cut short
//! was sent with the prompt and then with every later request: a provider
//! answers 400 to each, and the session was stuck (as `read`'s cut images
//! were, `docs/DEVIATIONS.md` #11). An image missing a field was dropped
//! without a word and `images` that were no list ignored: the model
//! answered about a picture it never saw.

use agent_ai::{ImageContent, Message};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::app::AgentSession;
use crate::tools::read::image::{Fit, FittedImage, fit_image, pixel_limit, sniff};

/// The user message of `text` and the command's `images` (Pi's
/// `ImageContent`s: `{type: "image", data, mimeType}`); the error names the
/// first image that cannot be sent and why.
///
/// Each image goes as `read` sends one: the type its bytes show (a PNG
/// said to be a GIF is sent as the PNG it is; `mimeType` may be left out),
/// scaled down to fit 2000x2000 pixels and 4.5 MiB when larger, with
/// `read`'s note on how to map coordinates back after the text.
pub async fn user_message(text: &str, command: &Value) -> Result<Message, String> {
    let images = match command.get("images") {
        None | Some(Value::Null) => return Ok(AgentSession::user_message(text, Vec::new())),
        Some(Value::Array(images)) => images.clone(),
        Some(_) => {
            return Err("Invalid command: \"images\" must be a list of images \
                 ({\"type\": \"image\", \"data\": BASE64, \"mimeType\": \"image/png\"})"
                .to_owned());
        }
    };
    // Decoding is CPU work (a large image is scaled down): off the runtime.
    let fitted = tokio::task::spawn_blocking(move || {
        images
            .iter()
            .enumerate()
            .map(|(index, image)| fit(image).map_err(|why| named(index, image, &why)))
            .collect::<Result<Vec<_>, _>>()
    })
    .await
    .map_err(|error| format!("the images could not be checked: {error}"))??;
    let mut text = text.to_owned();
    for note in fitted.iter().filter_map(FittedImage::dimension_note) {
        text.push('\n');
        text.push_str(&note);
    }
    let images = fitted
        .into_iter()
        .map(|image| ImageContent {
            data: image.data.into(),
            mime_type: image.mime_type.to_owned(),
        })
        .collect();
    Ok(AgentSession::user_message(&text, images))
}

/// `image` as it can be sent, or why it cannot.
fn fit(image: &Value) -> Result<FittedImage, String> {
    let data = match image.get("data") {
        Some(Value::String(data)) => data,
        // `"data": 5` read as an image with no data at all.
        Some(other) if !other.is_null() => {
            return Err("its \"data\" must be a string (the image in base64)".to_owned());
        }
        _ => return Err("it has no \"data\" (the image in base64)".to_owned()),
    };
    let Ok(bytes) = STANDARD.decode(data) else {
        return Err("it is not valid base64".to_owned());
    };
    let Some(kind) = sniff(&bytes) else {
        return Err(format!(
            "it is not a PNG, JPEG, GIF or WebP image ({} bytes)",
            bytes.len()
        ));
    };
    match fit_image(&bytes, kind, &CancellationToken::new()) {
        Ok(Fit::Image(fitted)) => Ok(fitted),
        Ok(Fit::TooLarge {
            width,
            height,
            max_pixels,
        }) => Err(format!(
            "{width}x{height} pixels is more than {}: send a smaller copy",
            pixel_limit(max_pixels, "an image may have to be scaled down")
        )),
        Ok(Fit::NoFit) | Err(_) => Err(format!(
            "it cannot be decoded (cut short or corrupt), or made small enough to send ({} bytes of {})",
            bytes.len(),
            kind.mime_type()
        )),
    }
}

/// `why` the `index`th image cannot be sent, naming it by its place and the
/// type it was said to be.
fn named(index: usize, image: &Value, why: &str) -> String {
    let said = image
        .get("mimeType")
        .and_then(Value::as_str)
        .map(|mime| format!(" ({mime})"))
        .unwrap_or_default();
    format!(
        "image {}{said} cannot be sent: {why}; nothing was sent",
        index + 1
    )
}
