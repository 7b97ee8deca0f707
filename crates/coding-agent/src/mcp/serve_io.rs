//! `mcp serve`'s stdio, with the JSON-RPC errors rmcp does not send: a line
//! that is not JSON is answered `-32700 Parse error` (rmcp dropped it, and
//! the client waited for an answer that never came), and a `tools/call`
//! whose params are not `{"name": string, "arguments"?: object}` is answered
//! `-32602 Invalid params` (rmcp answered `-32601`, as if the server had no
//! `tools/call` at all); a batch, or any line that is not a request object,
//! is answered `-32600 Invalid Request` with the id JSON-RPC asks for (rmcp
//! left the id out), as is a request JSON-RPC 2.0 or MCP does not allow
//! (no `"jsonrpc": "2.0"`, an id that is no string or integer, both a
//! method and a result, params or `_meta` that are no object; rmcp answered
//! those without an id). A line longer than rmcp takes is answered here too
//! (rmcp dropped it unanswered), and not kept whole in memory. Every other
//! line goes to rmcp as it came.

use rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
    ReadHalf, WriteHalf,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Bytes in flight between the checks and rmcp, each way.
const PIPE_BYTES: usize = 1 << 20;

/// The transport rmcp serves on: `input`'s lines, checked, and `output`,
/// which rmcp's answers and the checks' own share line by line; and the
/// task writing `output`, which ends once both have nothing more to write
/// (await it before exiting, or the last answers are lost).
pub(super) fn checked<R, W>(
    input: R,
    output: W,
) -> (
    ReadHalf<DuplexStream>,
    WriteHalf<DuplexStream>,
    JoinHandle<()>,
)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
    let (from_server, to_server) = tokio::io::split(ours);
    let (answers, answered) = mpsc::unbounded_channel();
    tokio::spawn(check_lines(input, to_server, answers));
    let writer = tokio::spawn(write_lines(from_server, answered, output));
    let (input, output) = tokio::io::split(theirs);
    (input, output, writer)
}

/// Passes `input`'s lines to the server unless [`answer_of`] (or, for a
/// line longer than rmcp takes, [`too_long`]) answers them; at its end,
/// ends the server's input.
async fn check_lines<R: AsyncRead + Unpin>(
    input: R,
    mut to_server: WriteHalf<DuplexStream>,
    answers: mpsc::UnboundedSender<String>,
) {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let whole = match read_line_capped(&mut input, &mut line).await {
            Ok(Some(whole)) => whole,
            Ok(None) | Err(_) => break,
        };
        if !whole {
            let _ = answers.send(too_long(&line));
            continue;
        }
        if line.trim_ascii().is_empty() {
            continue;
        }
        if let Some(answer) = answer_of(&line) {
            let _ = answers.send(answer);
            continue;
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        if to_server.write_all(&line).await.is_err() {
            break;
        }
    }
    let _ = to_server.shutdown().await;
}

/// Reads one line into `line`, its newline included, keeping at most the
/// [`DEFAULT_MAX_LINE_LENGTH`] bytes rmcp takes (a newline added where it
/// is missing counted) and skipping the rest: a 300 MB line without a
/// newline was held whole (333 MB of memory), and rmcp then dropped it
/// unanswered. `Some(true)` for a whole line, `Some(false)` for one cut
/// short, `None` at the end of the input.
async fn read_line_capped<R: AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    let mut whole = true;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            // The newline added for rmcp must fit too.
            let fits = line.len() < DEFAULT_MAX_LINE_LENGTH;
            return Ok((!line.is_empty()).then_some(whole && fits));
        }
        let newline = available.iter().position(|&byte| byte == b'\n');
        let take = newline.map_or(available.len(), |at| at + 1);
        if whole {
            let room = DEFAULT_MAX_LINE_LENGTH - line.len();
            if take <= room {
                line.extend_from_slice(&available[..take]);
            } else {
                line.extend_from_slice(&available[..take.min(room)]);
                whole = false;
            }
        }
        input.consume(take);
        if newline.is_some() {
            return Ok(Some(whole));
        }
    }
}

/// Writes the server's lines and the checks' answers to `output`, each line
/// whole, until both have ended: answers the checks queued as the client
/// closed its end came after the server's last line and were lost.
async fn write_lines<W: AsyncWrite + Unpin>(
    from_server: ReadHalf<DuplexStream>,
    mut answered: mpsc::UnboundedReceiver<String>,
    mut output: W,
) {
    let mut from_server = BufReader::new(from_server);
    let mut server_ended = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        tokio::select! {
            read = from_server.read_until(b'\n', &mut line), if !server_ended => {
                if !matches!(read, Ok(n) if n > 0) {
                    server_ended = true;
                    continue;
                }
            }
            answer = answered.recv() => match answer {
                Some(answer) => {
                    line.extend_from_slice(answer.as_bytes());
                    line.push(b'\n');
                }
                // The checks ended (after the server's input) ...
                None if server_ended => break,
                // ... and the server's last answers are still to come.
                None => {
                    let _ = tokio::io::copy_buf(&mut from_server, &mut output).await;
                    break;
                }
            },
        }
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
    let _ = output.flush().await;
}

/// The answer to a line longer than rmcp takes, of which `start` was kept:
/// with its id when the start shows it.
fn too_long(start: &[u8]) -> String {
    let mut id = None;
    // The start of an object: its fields until the line was cut.
    let _ = IdOf(&mut id).deserialize(&mut serde_json::Deserializer::from_slice(start));
    let id = id.filter(valid_id).unwrap_or(Value::Null);
    error_answer(
        &id,
        -32600,
        &format!(
            "Invalid Request: the line is longer than {} MiB; send large contents another way (e.g. write a file in parts)",
            DEFAULT_MAX_LINE_LENGTH >> 20
        ),
    )
}

/// Reads an object's `"id"` into its `Option` as the fields come, so the id
/// of an object cut short is known if it came before the cut.
struct IdOf<'a>(&'a mut Option<Value>);

impl<'de> DeserializeSeed<'de> for IdOf<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, from: D) -> Result<(), D::Error> {
        from.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for IdOf<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut fields: A) -> Result<(), A::Error> {
        while let Some(key) = fields.next_key::<String>()? {
            if key == "id" {
                *self.0 = Some(fields.next_value()?);
            } else {
                fields.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// Whether `id` is one JSON-RPC 2.0 allows and MCP answers with: a string
/// or an integer (MCP does not allow `null`, and a fraction or an integer
/// past 64 bits would come back changed).
fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

/// The error answer `line` gets here, when it is not JSON, not a single
/// request (a batch, which the MCP spec no longer has, or a string), not a
/// JSON-RPC 2.0 request MCP allows, or a `tools/call` request with params
/// no tool call can be made of. Where the id cannot be read (or is of a
/// type JSON-RPC does not allow) it is `null`, as JSON-RPC 2.0 asks: rmcp
/// left it out.
fn answer_of(line: &[u8]) -> Option<String> {
    let message: Value = match serde_json::from_slice(line) {
        Ok(message) => message,
        Err(error) => {
            return Some(error_answer(
                &Value::Null,
                -32700,
                &format!("Parse error: {error}"),
            ));
        }
    };
    let Value::Object(fields) = &message else {
        let why = if message.is_array() {
            "Invalid Request: batches are not supported; send one request per line"
        } else {
            "Invalid Request: a request is a JSON object"
        };
        return Some(error_answer(&Value::Null, -32600, why));
    };
    let is_response = fields.contains_key("result") || fields.contains_key("error");
    let has_method = fields.contains_key("method");
    let invalid = |id: &Value, why: &str| Some(error_answer(id, -32600, why));
    let id = match fields.get("id") {
        Some(id) if valid_id(id) => id,
        Some(_) => {
            return invalid(
                &Value::Null,
                "Invalid Request: the id is a string or an integer",
            );
        }
        // A notification: nothing can be answered.
        None if has_method || is_response => return None,
        None => {
            return invalid(
                &Value::Null,
                "Invalid Request: a request has an id and a method",
            );
        }
    };
    if message["jsonrpc"] != "2.0" {
        return invalid(id, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
    }
    if is_response && has_method {
        return invalid(
            id,
            "Invalid Request: a message is a request (method) or a response (result or error), not both",
        );
    }
    if is_response {
        return None;
    }
    if !message["method"].is_string() {
        return invalid(
            id,
            "Invalid Request: a request names its method as a string",
        );
    }
    let params = &message["params"];
    let invalid_params = |why: &str| Some(error_answer(id, -32602, why));
    if !matches!(params, Value::Null | Value::Object(_)) {
        return invalid_params("Invalid params: params are an object (MCP has named params only)");
    }
    if !matches!(params.get("_meta"), None | Some(Value::Object(_))) {
        return invalid_params("Invalid params: \"_meta\" is an object");
    }
    if message["method"] != "tools/call" {
        return None;
    }
    let named = params["name"].is_string();
    let arguments = matches!(
        params.get("arguments"),
        None | Some(Value::Null | Value::Object(_))
    );
    (!(named && arguments)).then(|| {
        error_answer(
            id,
            -32602,
            "Invalid params: tools/call takes {\"name\": string, \"arguments\": object}",
        )
    })
}

fn error_answer(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_that_are_not_json_or_calls_without_a_name_are_answered_here() {
        let parse = answer_of(b"{not json\n").unwrap();
        let parse: Value = serde_json::from_str(&parse).unwrap();
        assert_eq!(
            (&parse["id"], &parse["error"]["code"]),
            (&Value::Null, &json!(-32700))
        );
        for params in [
            json!({"name": "read", "arguments": "str"}),
            json!({"name": "read", "arguments": []}),
            json!({"name": 5}),
            json!({"arguments": {}}),
            Value::Null,
        ] {
            let line = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
            let answer: Value =
                serde_json::from_str(&answer_of(line.to_string().as_bytes()).unwrap()).unwrap();
            assert_eq!(
                (&answer["id"], &answer["error"]["code"]),
                (&json!(7), &json!(-32602)),
                "{params}"
            );
        }
        for passed in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ls"}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ls", "arguments": {"path": "."}}}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ] {
            assert_eq!(answer_of(passed.to_string().as_bytes()), None, "{passed}");
        }
    }

    /// JSON-RPC 2.0 answers a request whose id cannot be read with `"id":
    /// null`; rmcp left the id out, and a client matching answers by id
    /// could not tell the answer was for it.
    #[test]
    fn batches_and_lines_that_are_no_request_are_answered_invalid_with_the_id_known() {
        for (line, id) in [
            (
                json!([{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]),
                Value::Null,
            ),
            (json!("tools/list"), Value::Null),
            (json!(5), Value::Null),
            (json!({"jsonrpc": "2.0", "id": 4}), json!(4)),
            (
                json!({"jsonrpc": "2.0", "id": "a", "method": 7}),
                json!("a"),
            ),
        ] {
            let answer = answer_of(line.to_string().as_bytes()).expect("answered here");
            let answer: Value = serde_json::from_str(&answer).unwrap();
            assert_eq!(answer["id"], id, "{line}");
            assert_eq!(answer["error"]["code"], json!(-32600), "{line}");
        }
        let batch = answer_of(b"[]").unwrap();
        assert!(batch.contains("one request per line"), "{batch}");
        for response in [
            json!({"jsonrpc": "2.0", "id": 9, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 9, "error": {"code": 1, "message": "no"}}),
        ] {
            assert_eq!(
                answer_of(response.to_string().as_bytes()),
                None,
                "{response}"
            );
        }
    }

    /// rmcp answered these without an id (`{"jsonrpc":"2.0","error":...}`),
    /// though it could be read, or with none where JSON-RPC asks for `null`.
    #[test]
    fn requests_json_rpc_or_mcp_does_not_allow_are_answered_with_the_id_readable() {
        for (line, id, code) in [
            (
                json!({"jsonrpc": "1.0", "id": 9, "method": "ping"}),
                json!(9),
                -32600,
            ),
            (json!({"id": 10, "method": "ping"}), json!(10), -32600),
            (
                json!({"jsonrpc": "2.0", "id": 12, "method": "ping", "result": {}}),
                json!(12),
                -32600,
            ),
            (
                json!({"jsonrpc": "2.0", "id": 32, "method": "ping", "params": []}),
                json!(32),
                -32602,
            ),
            (
                json!({"jsonrpc": "2.0", "id": 33, "method": "tools/list", "params": "x"}),
                json!(33),
                -32602,
            ),
            (
                json!({"jsonrpc": "2.0", "id": 40, "method": "tools/call",
                    "params": {"name": "ls", "arguments": {}, "_meta": "str"}}),
                json!(40),
                -32602,
            ),
            (
                json!({"jsonrpc": "2.0", "id": null, "method": "ping"}),
                Value::Null,
                -32600,
            ),
            (
                json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}),
                Value::Null,
                -32600,
            ),
            (
                json!({"jsonrpc": "2.0", "id": true, "method": "ping"}),
                Value::Null,
                -32600,
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
                Value::Null,
                -32600,
            ),
            (json!({"jsonrpc": "2.0"}), Value::Null, -32600),
        ] {
            let answer = answer_of(line.to_string().as_bytes()).expect("answered here");
            let answer: Value = serde_json::from_str(&answer).unwrap();
            assert_eq!(answer["id"], id, "{line}");
            assert_eq!(answer["error"]["code"], json!(code), "{line}");
        }
        let huge = br#"{"jsonrpc": "2.0", "id": 99999999999999999999, "method": "ping"}"#;
        let answer: Value = serde_json::from_str(&answer_of(huge).unwrap()).unwrap();
        assert_eq!(answer["id"], Value::Null);
        for passed in [
            json!({"jsonrpc": "2.0", "id": "x", "method": "tools/list", "params": {"_meta": {}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        ] {
            assert_eq!(answer_of(passed.to_string().as_bytes()), None, "{passed}");
        }
    }

    /// Lines past rmcp's limit were dropped unanswered, and one without a
    /// newline was held whole: 300 MB took 333 MB of memory.
    #[tokio::test]
    async fn a_line_past_the_limit_is_cut_and_answered_with_its_id() {
        let mut input = format!(
            r#"{{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {{"name": "write", "arguments": {{"content": "{}"}}}}}}"#,
            "x".repeat(DEFAULT_MAX_LINE_LENGTH)
        );
        input.push_str("\n{\"jsonrpc\": \"2.0\", \"id\": 8, \"method\": \"ping\"}\n");
        input.push_str(&"y".repeat(DEFAULT_MAX_LINE_LENGTH + 1));
        let mut input = BufReader::new(input.as_bytes());
        let mut line = Vec::new();
        assert_eq!(
            read_line_capped(&mut input, &mut line).await.unwrap(),
            Some(false)
        );
        assert!(line.len() <= DEFAULT_MAX_LINE_LENGTH);
        let answer: Value = serde_json::from_str(&too_long(&line)).unwrap();
        assert_eq!(answer["id"], json!(7));
        assert_eq!(
            answer["error"],
            json!({"code": -32600, "message": "Invalid Request: the line is longer than 16 MiB; send large contents another way (e.g. write a file in parts)"})
        );
        line.clear();
        assert_eq!(
            read_line_capped(&mut input, &mut line).await.unwrap(),
            Some(true)
        );
        assert_eq!(
            line,
            b"{\"jsonrpc\": \"2.0\", \"id\": 8, \"method\": \"ping\"}\n"
        );
        line.clear();
        assert_eq!(
            read_line_capped(&mut input, &mut line).await.unwrap(),
            Some(false)
        );
        let answer: Value = serde_json::from_str(&too_long(&line)).unwrap();
        assert_eq!(answer["id"], Value::Null);
        line.clear();
        assert_eq!(read_line_capped(&mut input, &mut line).await.unwrap(), None);
    }
}
