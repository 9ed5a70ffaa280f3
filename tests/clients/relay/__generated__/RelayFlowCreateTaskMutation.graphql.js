/**
 * @generated SignedSource<<1c346f1b90324676585b73fa63f48f4c>>
 * @lightSyntaxTransform
 */

/* eslint-disable */

'use strict';

var node = (function(){
var v0 = [
  {
    "defaultValue": null,
    "kind": "LocalArgument",
    "name": "input"
  }
],
v1 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "id",
  "storageKey": null
},
v2 = [
  {
    "alias": null,
    "args": [
      {
        "kind": "Variable",
        "name": "input",
        "variableName": "input"
      }
    ],
    "concreteType": "Task",
    "kind": "LinkedField",
    "name": "createTask",
    "plural": false,
    "selections": [
      (v1/*:: as any*/),
      {
        "alias": null,
        "args": null,
        "kind": "ScalarField",
        "name": "title",
        "storageKey": null
      },
      {
        "alias": null,
        "args": null,
        "concreteType": "TaskInstance",
        "kind": "LinkedField",
        "name": "currentInstance",
        "plural": false,
        "selections": [
          (v1/*:: as any*/)
        ],
        "storageKey": null
      }
    ],
    "storageKey": null
  }
];
return {
  "fragment": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Fragment",
    "metadata": null,
    "name": "RelayFlowCreateTaskMutation",
    "selections": (v2/*:: as any*/),
    "type": "Mutation",
    "abstractKey": null
  },
  "kind": "Request",
  "operation": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Operation",
    "name": "RelayFlowCreateTaskMutation",
    "selections": (v2/*:: as any*/)
  },
  "params": {
    "cacheID": "82fac657f4c8b89180a5fa177c4138ae",
    "id": null,
    "metadata": {},
    "name": "RelayFlowCreateTaskMutation",
    "operationKind": "mutation",
    "text": "mutation RelayFlowCreateTaskMutation(\n  $input: CreateTaskInput!\n) {\n  createTask(input: $input) {\n    id\n    title\n    currentInstance {\n      id\n    }\n  }\n}\n"
  }
};
})();

node.hash = "5233e90bb0174a94de8a9fbb03f87ddd";

module.exports = node;
