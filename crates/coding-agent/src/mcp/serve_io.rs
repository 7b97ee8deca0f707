//! `mcp serve`'s stdio, with the JSON-RPC errors rmcp does not send: a line
//! that is not JSON is answered `-32700 Parse error` (rmcp dropped it, and
//! the client waited for an answer that never came), and a `tools/call`
//! whose params are not `{"name": string, "arguments"?: object}` is answered
//! `-32602 Invalid params` (rmcp answered `-32601`, as if the server had no
//! `tools/call` at all); a batch, or any line that is not a request object,
//! is answered `-32600 Invalid Request` with the id JSON-RPC asks for (rmcp
//! left the id out). Every other line goes to rmcp as it came.

use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream, ReadHalf,
    WriteHalf,
};
use tokio::sync::mpsc;

/// Bytes in flight between the checks and rmcp, each way.
const PIPE_BYTES: usize = 1 << 20;

/// The transport rmcp serves on: `input`'s lines, checked, and `output`,
/// which rmcp's answers and the checks' own share line by line.
pub(super) fn checked<R, W>(
    input: R,
    output: W,
) -> (ReadHalf<DuplexStream>, WriteHalf<DuplexStream>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
    let (from_server, to_server) = tokio::io::split(ours);
    let (answers, answered) = mpsc::unbounded_channel();
    tokio::spawn(check_lines(input, to_server, answers));
    tokio::spawn(write_lines(from_server, answered, output));
    tokio::io::split(theirs)
}

/// Passes `input`'s lines to the server unless [`answer_of`] answers them;
/// at its end, ends the server's input.
async fn check_lines<R: AsyncRead + Unpin>(
    input: R,
    mut to_server: WriteHalf<DuplexStream>,
    answers: mpsc::UnboundedSender<String>,
) {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
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

/// Writes the server's lines and the checks' answers to `output`, each line
/// whole, until the server's output ends.
async fn write_lines<W: AsyncWrite + Unpin>(
    from_server: ReadHalf<DuplexStream>,
    mut answered: mpsc::UnboundedReceiver<String>,
    mut output: W,
) {
    let mut from_server = BufReader::new(from_server);
    let mut line = Vec::new();
    loop {
        line.clear();
        tokio::select! {
            read = from_server.read_until(b'\n', &mut line) => {
                if !matches!(read, Ok(n) if n > 0) {
                    break;
                }
            }
            Some(answer) = answered.recv() => {
                line.extend_from_slice(answer.as_bytes());
                line.push(b'\n');
            }
        }
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            break;
        }
    }
}

/// The error answer `line` gets here, when it is not JSON, not a single
/// request (a batch, which the MCP spec no longer has, or a string), a
/// request without a method, or a `tools/call` request with params no tool
/// call can be made of. Where the id cannot be read it is `null`, as
/// JSON-RPC 2.0 asks: rmcp left it out.
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
    let id = fields.get("id")?;
    let is_response = fields.contains_key("result") || fields.contains_key("error");
    if !is_response && !message["method"].is_string() {
        return Some(error_answer(
            id,
            -32600,
            "Invalid Request: a request names its method as a string",
        ));
    }
    if message["method"] != "tools/call" {
        return None;
    }
    let params = &message["params"];
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
}
