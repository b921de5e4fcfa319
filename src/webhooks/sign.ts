// The delivery headers of SPEC.md section 6 (names, signature scheme, user agent) are the receiver
// kit's: the webhook contract is written once, in packages/receiver-kit, and the service signs
// with the same code its consumers verify with. The signature covers `<timestamp>.<body bytes>`
// exactly as sent: the body is the stored event body, encoded once, signed and sent as one buffer.
export { deliveryHeaders } from '../../packages/receiver-kit/src/sign.ts';
