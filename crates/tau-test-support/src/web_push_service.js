// Starts the npm `web-push-testing` mock push service on 127.0.0.1 at a free port and
// prints the port on the first line of stdout. It stops when stdin closes. It keeps each
// push it accepts, decrypted with the subscription's keys (RFC 8291), for the test to read.
'use strict';
const http = require('http');
const TestingServer = require('web-push-testing/src/server.js');
const { PushApiModel } = require('web-push-testing/src/PushApiModel.js');

const model = new PushApiModel();
// Its own start() listens on a fixed port; the routes are set here and served on a free one.
const server = new TestingServer(model, 0);
server.setRequestHandlers();
const listener = http.createServer(server._app);
listener.listen(0, '127.0.0.1', () => {
  const { port } = listener.address();
  model.notifyUrl = `http://127.0.0.1:${port}/notify/`;
  process.stdout.write(`${port}\n`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
