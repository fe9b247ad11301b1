// Fidelity check for omniforge's fake LLM provider: the official openai SDK
// streams a tool-calling answer from it, assembles the message with its own
// helpers, then makes a plain call, and prints both as JSON on stdout for the
// C++ test (libs/llm/testing/fake_fidelity_test.cc) to compare.
//
//   node openai_fidelity.mjs <base_url> <api_key>
import OpenAI from 'openai';

const [baseURL, apiKey] = process.argv.slice(2);
if (!baseURL || !apiKey) {
  console.error('usage: node openai_fidelity.mjs <base_url> <api_key>');
  process.exit(2);
}

const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 10_000 });
const objectSchema = (properties) => ({
  type: 'object',
  properties,
  required: Object.keys(properties),
  additionalProperties: false,
});
// strict: the SDK then JSON.parses each call's assembled arguments.
const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather for a city and day',
      strict: true,
      parameters: objectSchema({ city: { type: 'string' }, day: { type: 'string' } }),
    },
  },
  {
    type: 'function',
    function: {
      name: 'get_time',
      description: 'Local time in a time zone',
      strict: true,
      parameters: objectSchema({ tz: { type: 'string' } }),
    },
  },
];
const messages = [{ role: 'user', content: 'Weather and time in Zürich?' }];

const stream = client.chat.completions.stream({
  model: 'gpt-fidelity',
  messages,
  tools,
  stream_options: { include_usage: true },
});
let chunks = 0;
stream.on('chunk', () => {
  chunks += 1;
});
const streamed = await stream.finalChatCompletion();

const plain = await client.chat.completions.create({ model: 'gpt-fidelity', messages, tools });

const summary = (completion) => ({
  id: completion.id,
  model: completion.model,
  message: completion.choices[0].message,
  finish_reason: completion.choices[0].finish_reason,
  usage: completion.usage,
});
console.log(JSON.stringify({ stream: { ...summary(streamed), chunks }, plain: summary(plain) }));
