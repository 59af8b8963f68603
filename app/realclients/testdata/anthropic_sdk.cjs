// One messages.create() through the official Anthropic SDK, with its
// defaults (two retries, its own backoff), configured from the environment
// as a person's app is: ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY. Prints one
// JSON line: the answer, or the error the SDK threw.
const mod = require("@anthropic-ai/sdk");
const Anthropic = mod.default || mod.Anthropic || mod;
const client = new Anthropic();
const t0 = Date.now();
(async () => {
  try {
    const params = {
      model: process.env.SDK_MODEL,
      max_tokens: 64,
      messages: [{ role: "user", content: "say hi" }],
    };
    let text = "", response;
    if (process.env.SDK_STREAM) {
      const stream = client.messages.stream(params);
      stream.on("text", (t) => { text += t; });
      const got = await stream.withResponse();
      response = got.response;
      await stream.finalMessage();
    } else {
      const got = await client.messages.create(params).withResponse();
      response = got.response;
      text = got.data.content.filter((b) => b.type === "text").map((b) => b.text).join("");
    }
    console.log(JSON.stringify({
      ok: true, text, ms: Date.now() - t0,
      credential: response.headers.get("x-subpool-credential") || "",
      attempts: response.headers.get("x-subpool-attempts") || "",
    }));
  } catch (e) {
    console.log(JSON.stringify({
      ok: false, ms: Date.now() - t0, name: e.constructor.name, status: e.status || 0,
      message: String(e.message),
      should_retry: (e.headers && e.headers.get && e.headers.get("x-should-retry")) || "",
    }));
  }
})();
