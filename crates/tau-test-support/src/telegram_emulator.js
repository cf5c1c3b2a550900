// Starts the npm `telegram-test-api` Bot API emulator on 127.0.0.1 at a free port and
// prints the port on the first line of stdout. It stops when stdin closes.
'use strict';
const http = require('http');
const TelegramServer = require('telegram-test-api');

const server = new TelegramServer({ host: '127.0.0.1', port: 1, storeTimeout: 600 });
// The emulator's own start() listens on a fixed port (0 means 9000 to it); listening here
// on port 0 takes a free one.
const listener = http.createServer(server.webServer);
listener.listen(0, '127.0.0.1', () => {
  const { port } = listener.address();
  server.config.apiURL = `http://127.0.0.1:${port}`;
  process.stdout.write(`${port}\n`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
