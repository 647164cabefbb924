// Placeholder: replaced by the platform adapter conformance suite (issue 4).
export {};
