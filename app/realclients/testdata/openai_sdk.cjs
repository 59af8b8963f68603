// One responses.create() through the official openai SDK, with its
// defaults (two retries, its own backoff), configured from the environment
// as a person's app is: OPENAI_BASE_URL, OPENAI_API_KEY. Prints one JSON
// line: the answer, or the error the SDK threw.
const mod = require("openai");
const OpenAI = mod.default || mod.OpenAI || mod;
const client = new OpenAI();
const t0 = Date.now();
(async () => {
  try {
    const params = { model: process.env.SDK_MODEL, input: "say hi" };
    let text = "", response;
    if (process.env.SDK_STREAM) {
      const got = await client.responses.create({ ...params, stream: true }).withResponse();
      response = got.response;
      for await (const ev of got.data) {
        if (ev.type === "response.output_text.delta") text += ev.delta;
      }
    } else {
      const got = await client.responses.create(params).withResponse();
      response = got.response;
      text = got.data.output_text;
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
