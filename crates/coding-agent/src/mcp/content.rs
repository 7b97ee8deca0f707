//! An MCP tool result as the model reads it.
//!
//! Text and images pass through; what the model's messages cannot hold
//! becomes a line of text saying what was there (audio, a link to a
//! resource, a binary resource). `structuredContent` is added as JSON text
//! unless the text blocks already carry it (servers are asked to send both),
//! also as the Python SDK wraps a value, `{"result": value}`, and writes a
//! list: one block per item.
//! A result the server marked `isError` stays an error. What a turn cannot
//! hold is cut or fitted first ([`super::limits`]).

use agent_ai::Content;
use agent_core::{AgentToolResult, ToolError};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde::Serialize;
use serde_json::Value;
use serde_with::skip_serializing_none;
use tokio_util::sync::CancellationToken;

use super::limits::{TextCut, bound_text, fitted_image};
use crate::support::cancel::aborted;
use crate::support::truncate::DEFAULT_MAX_BYTES;
use crate::tools::read::image::Aborted;

/// What an MCP call's result carries for UIs and logs (never sent to the model).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpCallDetails {
    /// The server's name from the configuration.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// The server's `structuredContent`, when it sent one no larger than
    /// the text the model may be shown (details are saved with the session).
    pub structured_content: Option<Value>,
    /// How much of the text the model was shown, when it was cut.
    pub truncated: Option<TextCut>,
}

/// The model's view of `result`, the call of `tool` on `server`; `Err` when
/// the server said `isError`, with the same details. CPU-heavy when an image is scaled down: call
/// it off the async runtime.
pub fn to_tool_result(
    result: CallToolResult,
    server: &str,
    tool: &str,
    cancel: &CancellationToken,
) -> Result<AgentToolResult, ToolError> {
    let mut content = Vec::with_capacity(result.content.len());
    for item in result.content {
        content.extend(block(item, cancel).map_err(|_| aborted())?);
    }
    // Written out once: for the model (unless a block holds it already) and
    // to measure it for the details.
    let structured_text = result.structured_content.as_ref().map(Value::to_string);
    if let (Some(structured), Some(written)) = (&result.structured_content, &structured_text) {
        // The Python SDK sends a tool's value that is no object as
        // `{"result": value}` beside its text: the same, said twice.
        let wrapped = structured
            .as_object()
            .filter(|object| object.len() == 1)
            .and_then(|object| object.get("result"));
        let texts: Vec<&str> = content.iter().filter_map(Content::as_text).collect();
        let already_there =
            said_by(&texts, structured) || wrapped.is_some_and(|value| said_by(&texts, value));
        if !already_there {
            content.push(Content::text(written.clone()));
        }
    }
    let (mut content, truncated) = bound_text(content);
    // An error carries them too: it carried `{}`, and a UI or hook could
    // not tell which server's tool had failed.
    let details = McpCallDetails {
        server: server.to_owned(),
        tool: tool.to_owned(),
        structured_content: result
            .structured_content
            .filter(|_| structured_text.is_some_and(|written| written.len() <= DEFAULT_MAX_BYTES)),
        truncated,
    };
    let details = serde_json::to_value(&details).ok();
    if result.is_error == Some(true) {
        let text: Vec<&str> = content.iter().filter_map(Content::as_text).collect();
        let text = if text.is_empty() {
            format!("MCP tool \"{tool}\" failed without a message")
        } else {
            text.join("\n")
        };
        let error = ToolError::new(text);
        return Err(match details {
            Some(details) => error.with_details(details),
            None => error,
        });
    }
    if content.is_empty() {
        content.push(Content::text("(no output)"));
    }
    Ok(AgentToolResult {
        content,
        details,
        terminate: false,
    })
}

/// Whether the text blocks `texts` already say `value`: one of them is it (as
/// JSON, or as the very string), or they are its items, one block each, as
/// the Python SDK writes a list (`["a", "b"]` as the blocks `a` and `b`: the
/// model read `a`, `b`, then `{"result":["a","b"]}`). An empty list has no
/// block, so nothing else says it.
fn said_by(texts: &[&str], value: &Value) -> bool {
    let same = |text: &str, value: &Value| {
        value.as_str() == Some(text)
            || serde_json::from_str::<Value>(text).is_ok_and(|parsed| &parsed == value)
    };
    texts.iter().any(|text| same(text, value))
        || value.as_array().is_some_and(|items| {
            !items.is_empty()
                && items.len() == texts.len()
                && texts.iter().zip(items).all(|(text, item)| same(text, item))
        })
}

/// A hook's `updatedMCPToolOutput` given as MCP content blocks, read as a
/// server's are (a resource as `[resource: URI]` and its text, an image
/// fitted); `None` when it is not a list of them.
pub fn hook_blocks(output: &Value) -> Option<Vec<Content>> {
    let blocks: Vec<ContentBlock> = serde_json::from_value(output.clone()).ok()?;
    let never = CancellationToken::new();
    let mut content = Vec::with_capacity(blocks.len());
    for item in blocks {
        content.extend(block(item, &never).ok()?);
    }
    Some(content)
}

/// What the model reads of one block: an image may bring a note with it.
fn block(block: ContentBlock, cancel: &CancellationToken) -> Result<Vec<Content>, Aborted> {
    Ok(vec![match block {
        ContentBlock::Text(text) => Content::text(text.text),
        ContentBlock::Image(image) => return fitted_image(&image.data, &image.mime_type, cancel),
        ContentBlock::Audio(audio) => Content::text(format!(
            "[audio: {}, {} bytes, not shown]",
            audio.mime_type,
            decoded_len(&audio.data)
        )),
        ContentBlock::ResourceLink(link) => {
            let mut line = format!("[resource link: {} <{}>", link.name, link.uri);
            if let Some(mime) = &link.mime_type {
                line.push_str(&format!(" ({mime})"));
            }
            if let Some(description) = &link.description {
                line.push_str(&format!(": {description}"));
            }
            line.push(']');
            Content::text(line)
        }
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                Content::text(format!("[resource: {uri}]\n{text}"))
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => Content::text(format!(
                "[resource: {uri} ({}), {} bytes of binary data, not shown]",
                mime_type.as_deref().unwrap_or("application/octet-stream"),
                decoded_len(&blob)
            )),
            other => unsupported(&other),
        },
        other => unsupported(&other),
    }])
}

/// A content kind newer than this client: said, rather than dropped.
fn unsupported(content: &impl Serialize) -> Content {
    Content::text(unsupported_text(content))
}

fn unsupported_text(content: &impl Serialize) -> String {
    format!(
        "[unsupported MCP content: {}]",
        serde_json::to_string(content).unwrap_or_default()
    )
}

/// An answer to `tools/call` the SDK could not read as a tool result
/// because a content block is of a kind newer than it (`{"type":
/// "futurekind"}`): the result, that block said as `unsupported` says
/// one, rather than the whole answer lost. `None` when the answer has no
/// list of content blocks.
pub fn with_unknown_blocks_said(answer: Value) -> Option<CallToolResult> {
    let Value::Object(mut result) = answer else {
        return None;
    };
    let Some(Value::Array(blocks)) = result.get_mut("content") else {
        return None;
    };
    for block in blocks.iter_mut() {
        if serde_json::from_value::<ContentBlock>(block.clone()).is_err() {
            *block = serde_json::json!({"type": "text", "text": unsupported_text(block)});
        }
    }
    serde_json::from_value(Value::Object(result)).ok()
}

/// The size of base64 `data` once decoded (without decoding it).
fn decoded_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{EmbeddedResource, Resource};
    use serde_json::json;

    const ONE_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

    fn map(result: CallToolResult) -> Result<AgentToolResult, ToolError> {
        to_tool_result(result, "s", "t", &CancellationToken::new())
    }

    #[test]
    fn every_block_kind_becomes_text_or_an_image() {
        let mut link = Resource::new("file:///a.txt", "a.txt");
        link.mime_type = Some("text/plain".into());
        link.description = Some("the file".into());
        let result = CallToolResult::success(vec![
            ContentBlock::text("hello"),
            ContentBlock::image(ONE_PIXEL_PNG, "image/png"),
            ContentBlock::audio("aGVsbG8=", "audio/wav"),
            ContentBlock::resource_link(link),
            ContentBlock::embedded_text("mem://note", "remember"),
            ContentBlock::Resource(EmbeddedResource::new(
                ResourceContents::BlobResourceContents {
                    uri: "mem://blob".into(),
                    mime_type: None,
                    blob: "AAAA".into(),
                    meta: None,
                },
            )),
        ]);
        let result = map(result).unwrap();
        assert_eq!(
            result.content,
            vec![
                Content::text("hello"),
                Content::image(ONE_PIXEL_PNG, "image/png"),
                Content::text("[audio: audio/wav, 5 bytes, not shown]"),
                Content::text("[resource link: a.txt <file:///a.txt> (text/plain): the file]"),
                Content::text("[resource: mem://note]\nremember"),
                Content::text(
                    "[resource: mem://blob (application/octet-stream), 3 bytes of binary data, not shown]"
                ),
            ]
        );
        assert_eq!(result.details, Some(json!({"server": "s", "tool": "t"})));
    }

    #[test]
    fn structured_content_is_added_unless_a_text_block_has_it() {
        let mut result = CallToolResult::success(vec![ContentBlock::text("{\"a\": 1}")]);
        result.structured_content = Some(json!({"a": 1}));
        let mapped = map(result).unwrap();
        assert_eq!(mapped.content, vec![Content::text("{\"a\": 1}")]);

        let mut result = CallToolResult::success(vec![ContentBlock::text("summary")]);
        result.structured_content = Some(json!({"a": 1}));
        let mapped = map(result).unwrap();
        assert_eq!(
            mapped.content,
            vec![Content::text("summary"), Content::text("{\"a\":1}")]
        );
    }

    /// The Python SDK wraps a value that is no object as `{"result": ...}`
    /// beside its text: the model read each such result twice.
    #[test]
    fn the_python_sdks_wrapped_value_is_not_said_twice() {
        for (text, value) in [("mcp read of x", json!("mcp read of x")), ("42", json!(42))] {
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = Some(json!({"result": value}));
            assert_eq!(map(result).unwrap().content, vec![Content::text(text)]);
        }
        let mut result = CallToolResult::success(vec![ContentBlock::text("other")]);
        result.structured_content = Some(json!({"result": "x"}));
        assert_eq!(
            map(result).unwrap().content,
            vec![Content::text("other"), Content::text("{\"result\":\"x\"}")]
        );
    }

    /// The Python SDK says a list one text block per item (a string as it is,
    /// anything else as indented JSON) beside `{"result": [...]}`: the model
    /// read `a`, `b`, then `{"result":["a","b"]}`. The shapes are the SDK's
    /// (`mcp` 2.3.0) for `list[str]`, `list[int]`, a list of models, a tuple.
    #[test]
    fn the_python_sdks_list_is_not_said_twice() {
        let cases = [
            (vec!["a", "b"], json!(["a", "b"])),
            (vec!["only"], json!(["only"])),
            (vec!["1", "2"], json!([1, 2])),
            (
                vec!["{\n  \"x\": 1\n}", "{\n  \"x\": 2\n}"],
                json!([{"x": 1}, {"x": 2}]),
            ),
            (vec!["1", "a"], json!([1, "a"])),
        ];
        for (texts, items) in cases {
            let blocks = texts.iter().map(|&text| ContentBlock::text(text)).collect();
            let mut result = CallToolResult::success(blocks);
            result.structured_content = Some(json!({"result": items}));
            let expected: Vec<Content> = texts.iter().map(|&text| Content::text(text)).collect();
            assert_eq!(map(result).unwrap().content, expected, "{texts:?}");
        }
        // Blocks that are not the items, one per item, say something else.
        let mut result =
            CallToolResult::success(vec![ContentBlock::text("b"), ContentBlock::text("a")]);
        result.structured_content = Some(json!({"result": ["a", "b"]}));
        assert_eq!(
            map(result).unwrap().content,
            vec![
                Content::text("b"),
                Content::text("a"),
                Content::text("{\"result\":[\"a\",\"b\"]}")
            ]
        );
        // An empty list has no block: its structured content alone says it.
        let mut result = CallToolResult::success(Vec::new());
        result.structured_content = Some(json!({"result": []}));
        assert_eq!(
            map(result).unwrap().content,
            vec![Content::text("{\"result\":[]}")]
        );
    }

    #[test]
    fn details_keep_structured_content_only_within_the_text_limit() {
        let small = json!({"rows": [1, 2]});
        let mut result = CallToolResult::success(vec![ContentBlock::text("two rows")]);
        result.structured_content = Some(small.clone());
        let details = map(result).unwrap().details.unwrap();
        assert_eq!(details["structuredContent"], small);

        let large = json!({"rows": vec!["x".repeat(100); 1000]});
        let mut result = CallToolResult::success(vec![ContentBlock::text("many rows")]);
        result.structured_content = Some(large);
        let details = map(result).unwrap().details.unwrap();
        assert_eq!(details.get("structuredContent"), None);
        // The model still reads it, as text cut to the limit.
        assert_eq!(details["truncated"]["shownBytes"], 50 * 1024);
    }

    /// With the details a success has: an error's were `{}`, and a UI or
    /// hook could not tell which server's tool had failed.
    #[test]
    fn a_server_error_stays_an_error_with_its_text_and_details() {
        let details = json!({"server": "s", "tool": "t"});
        let result = CallToolResult::error(vec![ContentBlock::text("no such city")]);
        assert_eq!(
            map(result).unwrap_err(),
            ToolError::new("no such city").with_details(details.clone())
        );
        let result = CallToolResult::error(Vec::new());
        assert_eq!(
            map(result).unwrap_err(),
            ToolError::new("MCP tool \"t\" failed without a message").with_details(details)
        );
    }

    #[test]
    fn a_block_of_an_unknown_kind_is_said_and_the_rest_kept() {
        let answer = serde_json::json!({"content": [
            {"type": "text", "text": "kept"},
            {"type": "futurekind", "foo": 1},
        ], "isError": false});
        let result = with_unknown_blocks_said(answer).unwrap();
        let mapped = map(result).unwrap();
        assert_eq!(
            mapped.content,
            [
                Content::text("kept"),
                Content::text(r#"[unsupported MCP content: {"type":"futurekind","foo":1}]"#)
            ]
        );
        assert!(with_unknown_blocks_said(serde_json::json!({"answer": 42})).is_none());
    }

    #[test]
    fn an_empty_result_says_so() {
        let result = map(CallToolResult::success(Vec::new())).unwrap();
        assert_eq!(result.content, vec![Content::text("(no output)")]);
    }
}
