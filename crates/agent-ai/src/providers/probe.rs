//! What a server says about the models it serves: llama.cpp's `GET /props`
//! reports the context it was started with (`-c`), so a session can compact
//! in time without being told the window; an OpenAI-compatible `GET /models`
//! lists the models RPC `get_available_models` offers.

use std::time::Duration;

use serde_json::Value;

/// How long the question may take; a server that does not answer has no say.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The context window the server at `base_url` (an OpenAI-compatible URL such
/// as `http://127.0.0.1:8080/v1`) reports in `/props`, if it does.
pub async fn server_context_window(base_url: &str) -> Option<u64> {
    let root = base_url.trim_end_matches('/');
    let root = root.strip_suffix("/v1").unwrap_or(root);
    let client = reqwest::Client::builder()
        .timeout(PROBE_TIMEOUT)
        .build()
        .ok()?;
    let response = client.get(format!("{root}/props")).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let props: Value = serde_json::from_str(&response.text().await.ok()?).ok()?;
    props
        .pointer("/default_generation_settings/n_ctx")
        .or_else(|| props.get("n_ctx"))
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)
}

/// The model ids an OpenAI-compatible server lists at `GET /models`
/// (`{"data":[{"id":...}]}`); none when it does not answer.
pub async fn server_models(base_url: &str, api_key: Option<&str>) -> Vec<String> {
    let Ok(client) = reqwest::Client::builder().timeout(PROBE_TIMEOUT).build() else {
        return Vec::new();
    };
    let mut request = client.get(format!("{}/models", base_url.trim_end_matches('/')));
    if let Some(key) = api_key {
        request = request.bearer_auth(key);
    }
    let Ok(response) = request.send().await else {
        return Vec::new();
    };
    if !response.status().is_success() {
        return Vec::new();
    }
    let Some(list) = response
        .text()
        .await
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
    else {
        return Vec::new();
    };
    list.get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|model| model.get("id")?.as_str().map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use super::*;

    /// A server answering one request with `status` and `body`.
    fn serve_once(status: &'static str, body: &'static str) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        });
        format!("http://{addr}/v1")
    }

    #[tokio::test]
    async fn llama_cpp_reports_its_context_in_props() {
        let url = serve_once(
            "200 OK",
            r#"{"default_generation_settings":{"n_ctx":4096},"total_slots":1}"#,
        );
        assert_eq!(server_context_window(&url).await, Some(4096));
    }

    #[tokio::test]
    async fn openai_compatible_servers_list_their_models() {
        let url = serve_once(
            "200 OK",
            r#"{"object":"list","data":[{"id":"qwen","object":"model"},{"id":"llama"}]}"#,
        );
        assert_eq!(server_models(&url, None).await, ["qwen", "llama"]);
    }

    #[tokio::test]
    async fn a_server_without_props_has_no_say() {
        let url = serve_once("404 Not Found", r#"{"error":"not found"}"#);
        assert_eq!(server_context_window(&url).await, None);
    }
}
